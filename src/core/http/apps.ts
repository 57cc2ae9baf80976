/**
 * The public and admin Koa apps. The middleware order lives here and nowhere else:
 * request id + child logger → request log → error rendering → path normalisation → cache headers
 * → body parsing → CORS (preflights end there) → the domain routers.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { TlsMaterial } from './tls.ts';
import type Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import { koaBody } from 'koa-body';
import { AppError, type ErrorFamily } from '../errors.ts';
import { type CorsConfig, corsMiddleware, type PerClientCors } from './cors.ts';
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
  /** Middleware run after body parsing, before the routers (e.g. the failed-authentication limiter). */
  middleware?: Koa.Middleware[];
  /** Max JSON/form body size in bytes (or a size string such as `1mb`). */
  bodyLimit?: number | string;
  /** Other body limits by path prefix (the first match wins), e.g. SCIM on the public listener. */
  bodyLimits?: ReadonlyArray<{ prefix: string; limit: number }>;
  /** Longest request target (path and query) in bytes; longer is 414. */
  urlLimit?: number;
  /** Error wire shape per path prefix, set before body parsing so that parse errors use it too. */
  errorFamilies?: ReadonlyArray<{ prefix: string; family: ErrorFamily }>;
  /** `serve.<listener>.cors`; off when absent. */
  cors?: CorsConfig;
  /** Routes that also allow the origins of the client behind the request. */
  perClientCors?: PerClientCors;
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
    const hit = families.find((f) => matches(ctx.path, f.prefix));
    if (hit) ctx.state.errorFamily = hit.family;
    await next();
  };
}

const matches = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/** RFC 9110 §15.5.15: a request target longer than the limit is 414, in the family's error shape. */
function urlLimit(max: number) {
  return async (ctx: Context, next: Next) => {
    if (Buffer.byteLength(ctx.originalUrl) > max) {
      const family = ctx.state.errorFamily as ErrorFamily | undefined;
      throw new AppError({
        status: 414,
        code: family === 'scim' ? 'scim' : family === 'dsync' ? 'error' : 'The request URI is too long',
        description: `The request target exceeds ${max} bytes.`,
      });
    }
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
  if (o.urlLimit) app.use(urlLimit(o.urlLimit));
  app.use(noCache);
  const parser = (limit: number | string) =>
    koaBody({
      jsonTypes: [
        'application/json',
        'application/scim+json',
        'application/merge-patch+json',
        'application/json-patch+json',
      ],
      jsonStrict: true,
      jsonLimit: limit,
      formLimit: limit,
      textLimit: limit,
      urlencoded: true,
      multipart: false,
      text: false,
    });
  const byDefault = parser(o.bodyLimit ?? '1mb');
  const byPrefix = (o.bodyLimits ?? []).map((b) => ({ prefix: b.prefix, parse: parser(b.limit) }));
  app.use((ctx, next) => (byPrefix.find((b) => matches(ctx.path, b.prefix))?.parse ?? byDefault)(ctx, next));
  // After body parsing (per-client origins read the form's client_id); preflights end here.
  if (o.cors?.enabled) app.use(corsMiddleware(o.cors, o.log, o.perClientCors));
  for (const m of o.middleware ?? []) app.use(m);
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
  /** With TLS: replaces the certificate and key for new connections. */
  setTls?(m: TlsMaterial): void;
}

/**
 * Node's HTTP parser refuses a request line plus headers over `maxHeaderSize` before Koa sees it;
 * answer that with 431 and a JSON error body (Node's default answer has none); a request timeout
 * with 408 and anything else the parser refuses with 400, as Node does, also with a JSON body.
 */
function onClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, error, description] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [
          '431 Request Header Fields Too Large',
          'Request Header Fields Too Large',
          'The request line and headers are too large.',
        ]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['408 Request Timeout', 'Request Timeout', 'The request was not received in time.']
        : ['400 Bad Request', 'Bad Request', 'The request could not be parsed.'];
  const body = JSON.stringify({ error, error_description: description });
  socket.end(
    `HTTP/1.1 ${status}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Serves `app` on plain HTTP, or HTTPS when `tls` holds a certificate and key. */
export function listen(
  app: Koa,
  port: number,
  host: string,
  tls?: TlsMaterial,
  opts: { maxHeaderSize?: number } = {},
): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const serverOpts = opts.maxHeaderSize ? { maxHeaderSize: opts.maxHeaderSize } : {};
    const server: Server = tls
      ? createHttpsServer({ ...serverOpts, cert: tls.cert, key: tls.key }, app.callback())
      : createHttpServer(serverOpts, app.callback());
    server.on('clientError', onClientError);
    server.keepAliveTimeout = 5_000;
    server.once('error', reject);
    server.listen({ port, host: host || undefined });
    server.once('listening', () => {
      const addr = server.address();
      const actual = typeof addr === 'object' && addr ? addr.port : port;
      resolve({
        server,
        port: actual,
        url: `${tls ? 'https' : 'http'}://${host && host !== '0.0.0.0' ? host : '127.0.0.1'}:${actual}`,
        ...(tls
          ? { setTls: (m: TlsMaterial) => (server as HttpsServer).setSecureContext({ cert: m.cert, key: m.key }) }
          : {}),
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
