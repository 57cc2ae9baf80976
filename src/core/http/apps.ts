/**
 * The public and admin Koa apps. The middleware order lives here and nowhere else:
 * request id + child logger → request log → error rendering → path normalisation → cache headers
 * → body parsing → the domain routers.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import { koaBody } from 'koa-body';
import type { ErrorFamily } from '../errors.ts';
import type { Logger } from '../log.ts';
import { observeHttp } from '../observability/metrics.ts';
import { runInScope } from '../observability/scope.ts';
import { contextFromHeaders, inSpan, SpanKind, SpanStatusCode } from '../observability/tracing.ts';
import { errorMiddleware } from './errors.ts';

export type Listener = 'public' | 'admin';

export interface AppOptions {
  kind: Listener;
  log: Logger;
  exposeDebug?: boolean;
  disableHealthLog?: boolean;
  /** Routers of the domains, mounted in order. */
  routers: Router[];
  /** Max JSON/form body size. */
  bodyLimit?: string;
  /** Error wire shape per path prefix, set before body parsing so that parse errors use it too. */
  errorFamilies?: ReadonlyArray<{ prefix: string; family: ErrorFamily }>;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestContext(log: Logger, kind: Listener, disableHealthLog: boolean) {
  return (ctx: Context, next: Next) => {
    const given = ctx.get('x-request-id');
    const id = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = log.child({ requestId: id, listener: kind });
    ctx.set('X-Request-Id', id);
    const started = performance.now();
    // One scope (request id, actor) and one server span per request; the span is renamed to the
    // route template once routing has matched (never the raw path: it may carry ids).
    return runInScope({ requestId: id, listener: kind }, () =>
      inSpan(
        `${ctx.method} ${kind}`,
        {
          kind: SpanKind.SERVER,
          parent: contextFromHeaders(ctx.headers),
          attributes: { 'http.request.method': ctx.method, 'gatehouse.listener': kind, 'gatehouse.request_id': id },
        },
        async (span) => {
          try {
            await next();
          } finally {
            const ms = performance.now() - started;
            const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
            const template = typeof route === 'string' ? route : undefined;
            observeHttp(kind, template, ctx.method, ctx.status, ms);
            if (span.isRecording()) {
              if (template) {
                span.updateName(`${ctx.method} ${template}`);
                span.setAttribute('http.route', template);
              }
              span.setAttribute('http.response.status_code', ctx.status);
              if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
            }
            if (!(disableHealthLog && ctx.path.includes('/health/'))) {
              const fields = {
                method: ctx.method,
                path: ctx.path, // never the query string: it may carry tokens or challenges
                status: ctx.status,
                ms: Math.round(ms * 10) / 10,
              };
              if (ctx.status >= 500) ctx.state.log.error(fields, 'request completed');
              else ctx.state.log.info(fields, 'request completed');
            }
          }
        },
      ),
    );
  };
}

/** Both listeners strip one trailing slash; the admin listener also accepts routes without `/admin`. */
function normalisePath(kind: Listener) {
  return async (ctx: Context, next: Next) => {
    let p = ctx.path;
    if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
    if (kind === 'admin' && !p.startsWith('/admin/') && p !== '/admin' && !p.startsWith('/api/')) p = `/admin${p}`;
    if (p !== ctx.path) ctx.path = p;
    await next();
  };
}

function familyByPrefix(families: ReadonlyArray<{ prefix: string; family: ErrorFamily }>) {
  return async (ctx: Context, next: Next) => {
    const hit = families.find((f) => ctx.path === f.prefix || ctx.path.startsWith(`${f.prefix}/`));
    if (hit) ctx.state.errorFamily = hit.family;
    await next();
  };
}

async function noCache(ctx: Context, next: Next) {
  await next();
  if (ctx.method === 'GET' && !ctx.response.get('Cache-Control')) {
    ctx.set('Cache-Control', 'private, no-cache, no-store, must-revalidate');
  }
}

export function createApp(o: AppOptions): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true; // errors are logged by our middleware, once
  app.use(requestContext(o.log, o.kind, o.disableHealthLog ?? true));
  app.use(errorMiddleware({ exposeDebug: o.exposeDebug ?? false }));
  app.use(normalisePath(o.kind));
  if (o.errorFamilies?.length) app.use(familyByPrefix(o.errorFamilies));
  app.use(noCache);
  app.use(
    koaBody({
      jsonTypes: [
        'application/json',
        'application/scim+json',
        'application/merge-patch+json',
        'application/json-patch+json',
      ],
      jsonStrict: true,
      jsonLimit: o.bodyLimit ?? '1mb',
      formLimit: o.bodyLimit ?? '1mb',
      textLimit: o.bodyLimit ?? '1mb',
      urlencoded: true,
      multipart: false,
      text: false,
    }),
  );
  for (const r of o.routers) {
    app.use(r.routes());
    app.use(r.allowedMethods());
  }
  return app;
}

export interface Listening {
  server: Server;
  port: number;
  url: string;
  close(graceMs?: number): Promise<void>;
}

export function listen(app: Koa, port: number, host: string): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const server = app.listen({ port, host: host || undefined });
    server.keepAliveTimeout = 5_000;
    server.once('error', reject);
    server.once('listening', () => {
      const addr = server.address();
      const actual = typeof addr === 'object' && addr ? addr.port : port;
      resolve({
        server,
        port: actual,
        url: `http://${host && host !== '0.0.0.0' ? host : '127.0.0.1'}:${actual}`,
        close: (graceMs = 10_000) =>
          new Promise<void>((res) => {
            // Stop accepting, let in-flight requests finish, then drop what is left.
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            server.close(() => {
              clearTimeout(timer);
              res();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
