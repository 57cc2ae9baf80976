/**
 * The public and admin Koa apps. The middleware order lives here and nowhere else:
 * request id + child logger → request log → error rendering → canonical path → cache headers
 * → CORS (preflights end there) → the listener's route table (core/http/routes.ts: one match, then
 * the matched route's gate — body types, per-client CORS, failed-authentication limiter, guard —
 * then its handlers).
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Span } from '@opentelemetry/api';
import Koa, { type Context, type Next } from 'koa';
import { AppError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { observeHttp } from '../observability/metrics.ts';
import { runInScope } from '../observability/scope.ts';
import { contextFromHeaders, inSpan, SpanKind, SpanStatusCode, tracingActive } from '../observability/tracing.ts';
import type { FailedAuthTarget } from './auth-failures.ts';
import { type CorsConfig, corsMiddleware, type PerClientCors } from './cors.ts';
import { type ErrorFamilies, type ErrorFamilyRoute, errorMiddleware, plainError } from './errors.ts';
import { type PreparedRoute, preparedAnswer } from './prepared.ts';
import { canonicalPath, type DeclaredRoute, type Guard, listenerRoutes, loggablePath } from './routes.ts';
import type { TlsMaterial } from './tls.ts';

export type Listener = 'public' | 'admin';

export interface AppOptions {
  kind: Listener;
  log: Logger;
  exposeDebug?: boolean;
  disableHealthLog?: boolean;
  /** Every route of the listener, each with its policy (core/http/routes.ts). */
  routes: readonly DeclaredRoute[];
  /** The guards the routes' `access` names (`public` is built in). */
  guards?: Readonly<Record<string, Guard>>;
  /** Body limits in bytes (or size strings such as `1mb`) by the names routes use; `default` for the rest. */
  bodyLimits?: Readonly<Record<string, number | string>>;
  /** The failed-authentication limiter of routes that declare a target. */
  failedAuth?: (target: FailedAuthTarget) => Koa.Middleware;
  /** Longest request target (path and query) in bytes; longer is 414. */
  urlLimit?: number;
  /** Error wire shape per path prefix, set before body parsing so that parse errors use it too. */
  errorFamilies?: ReadonlyArray<ErrorFamilyRoute>;
  /** The renderers of those families, by name (the domains register them). */
  errorRenderers?: ErrorFamilies['renderers'];
  /** `serve.<listener>.cors`; off when absent. */
  cors?: CorsConfig;
  /** Routes that also allow the origins of the client behind the request. */
  perClientCors?: PerClientCors;
  /** Documents answered before the Koa chain while they are prepared (see preparedDispatch). */
  prepared?: readonly PreparedRoute[];
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * `ctx.state` of every request. The request logger is created on first use: most requests log
 * nothing but the request line, and that one is skipped outright when its level is off.
 */
class RequestState {
  [key: string]: unknown;
  #log: Logger | undefined;
  readonly #parent: Logger;
  readonly requestId: string;
  readonly #listener: Listener;
  constructor(parent: Logger, requestId: string, listener: Listener) {
    this.#parent = parent;
    this.requestId = requestId;
    this.#listener = listener;
  }
  get log(): Logger {
    this.#log ??= this.#parent.child({ requestId: this.requestId, listener: this.#listener });
    return this.#log;
  }
  set log(v: Logger) {
    this.#log = v;
  }
}

function requestContext(log: Logger, kind: Listener, disableHealthLog: boolean) {
  /** Runs once the request is done (or failed): metrics, span status and the request line. */
  const finish = (ctx: Context, started: number, span: Span | undefined) => {
    const ms = performance.now() - started;
    const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
    const template = typeof route === 'string' ? route : undefined;
    const status = ctx.status;
    observeHttp(kind, template, ctx.method, status, ms);
    if (span?.isRecording()) {
      if (template) {
        span.updateName(`${ctx.method} ${template}`);
        span.setAttribute('http.route', template);
      }
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    const level = status >= 500 ? 'error' : 'info';
    if (log.isLevelEnabled(level) && !(disableHealthLog && ctx.path.includes('/health/'))) {
      const fields = {
        method: ctx.method,
        // The route template (`/api/setup/:token`), never the path's values nor the query string:
        // they may carry tokens, secrets or challenges.
        path: template ?? loggablePath(ctx.path),
        status,
        ms: Math.round(ms * 10) / 10,
      };
      (ctx.state.log as Logger)[level](fields, 'request completed');
    }
  };
  return (ctx: Context, next: Next) => {
    const given = ctx.get('x-request-id');
    const id = given && REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state = new RequestState(log, id, kind);
    ctx.set('X-Request-Id', id);
    const started = performance.now();
    // One scope (request id, actor) per request and, when tracing is on, one server span; the span
    // is renamed to the route template once routing has matched (never the raw path: it may carry ids).
    const scope = { requestId: id, listener: kind };
    if (!tracingActive()) {
      return runInScope(scope, async () => {
        try {
          await next();
        } finally {
          finish(ctx, started, undefined);
        }
      });
    }
    return runInScope(scope, () =>
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
            finish(ctx, started, span);
          }
        },
      ),
    );
  };
}

/** `prefix` itself or anything under it (`<prefix>/…`); the `<prefix>/` string is built once. */
function prefixMatcher(prefix: string): (path: string) => boolean {
  const under = `${prefix}/`;
  return (path) => path === prefix || path.startsWith(under);
}

const NO_CACHE = 'private, no-cache, no-store, must-revalidate';

/**
 * One middleware for what every request needs before routing, in this order:
 * - the canonical path (`canonicalPath`: RFC 3986 §6.2.2 normalisation, no empty segments, no
 *   trailing slash), the only path every later step reads; the admin listener also accepts routes
 *   without `/admin`;
 * - the error family by path prefix (the first match wins), set before body parsing so that parse
 *   errors use its shape too;
 * - RFC 9110 §15.5.15: a request target longer than `urlLimit` bytes is 414, in the family's shape;
 * - a GET answer that set no `Cache-Control` is not to be cached.
 */
function prepareRequest(kind: Listener, families: ReadonlyArray<ErrorFamilyRoute>, urlLimit: number | undefined) {
  const byPrefix = families.map((f) => ({ matches: prefixMatcher(f.prefix), family: f.family }));
  const noCache = (ctx: Context) => {
    if (ctx.method === 'GET' && !ctx.response.get('Cache-Control')) ctx.set('Cache-Control', NO_CACHE);
  };
  return (ctx: Context, next: Next) => {
    const path = ctx.path;
    let p = canonicalPath(path);
    if (kind === 'admin' && !p.startsWith('/admin/') && p !== '/admin' && !p.startsWith('/api/')) p = `/admin${p}`;
    if (p !== path) ctx.path = p;
    for (const f of byPrefix) {
      if (f.matches(p)) {
        ctx.state.errorFamily = f.family;
        break;
      }
    }
    if (urlLimit) {
      // A UTF-16 unit is at most 3 bytes of UTF-8: short targets need no byte count.
      const url = ctx.originalUrl;
      if (url.length * 3 > urlLimit && Buffer.byteLength(url) > urlLimit) {
        const description = `The request target exceeds ${urlLimit} bytes.`;
        throw plainError(
          ctx,
          414,
          description,
          () => new AppError({ status: 414, code: 'The request URI is too long', description }),
        );
      }
    }
    return next().then(() => noCache(ctx));
  };
}

/** The request listener of each app built here: Koa's, behind the prepared documents when it has any. */
const listeners = new WeakMap<Koa, RequestListener>();

/** The request listener that serves `app` (what `listen` passes to the HTTP server). */
export function requestListener(app: Koa): RequestListener {
  return listeners.get(app) ?? app.callback();
}

/**
 * Answers `GET` and `HEAD` of a prepared document's exact path before the Koa chain, with the
 * answer the chain would give: `X-Request-Id` (the caller's when well formed), `ETag` and `304` on
 * a matching `If-None-Match`, `Cache-Control`, `Vary: Origin` when CORS is on, the request line in
 * the log and the HTTP metrics under the route's template. A document is a few kilobytes sent many
 * times a second by every relying party; the chain's work around it (context objects, scope, body
 * parser, router) cost a third of the time.
 *
 * Everything else goes to Koa, as does a prepared path when the document is not ready (the feed is
 * not live, or a key changed and the next request rebuilds it), when tracing is on (the chain opens
 * the server span), when CORS is on and the request carries an `Origin` (the per-client origins
 * are looked up there) and when the target may exceed the URL limit (the chain answers 414).
 */
function preparedDispatch(o: AppOptions, routes: readonly PreparedRoute[], koa: RequestListener): RequestListener {
  const byPath = new Map(routes.map((r) => [r.path, r]));
  const cors = o.cors?.enabled === true;
  const { log, kind, urlLimit } = o;
  return (req, res) => {
    const method = req.method;
    const url = req.url ?? '';
    if (
      (method !== 'GET' && method !== 'HEAD') ||
      tracingActive() ||
      (urlLimit && url.length * 3 > urlLimit) ||
      (cors && req.headers.origin !== undefined)
    )
      return koa(req, res);
    const q = url.indexOf('?');
    const route = byPath.get(q < 0 ? url : url.slice(0, q));
    const doc = route?.document.ready();
    if (!route || !doc) return koa(req, res);
    const started = performance.now();
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    const { status, headers } = preparedAnswer(doc, route.cacheControl, req.headers['if-none-match']);
    res.writeHead(status, {
      'X-Request-Id': requestId,
      ...(cors ? { Vary: 'Origin' } : {}),
      ...headers,
    });
    if (status === 304 || method === 'HEAD') res.end();
    else res.end(doc.body);
    const ms = performance.now() - started;
    observeHttp(kind, route.path, method, status, ms);
    if (log.isLevelEnabled('info')) {
      const fields = { requestId, listener: kind, method, path: route.path, status, ms: Math.round(ms * 10) / 10 };
      log.info(fields, 'request completed');
    }
  };
}

export function createApp(o: AppOptions): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true; // errors are logged by our middleware, once
  const cors = o.cors?.enabled ? o.cors : undefined;
  let covers = (_path: string, _method: string) => false;
  const corsSteps = cors
    ? corsMiddleware(
        cors,
        o.log,
        o.perClientCors && {
          origins: (ctx) => (o.perClientCors as PerClientCors).origins(ctx),
          covers: (path, method) => covers(path, method),
        },
      )
    : undefined;
  const table = listenerRoutes(o.routes, {
    guards: o.guards ?? {},
    bodyLimits: { default: '1mb', ...o.bodyLimits },
    ...(corsSteps?.perClient ? { perClientCors: corsSteps.perClient } : {}),
    ...(o.failedAuth ? { failedAuth: o.failedAuth } : {}),
  });
  covers = (path, method) => table.match(path, method)?.policy.cors === 'per-client';
  app.use(requestContext(o.log, o.kind, o.disableHealthLog ?? true));
  app.use(errorMiddleware({ exposeDebug: o.exposeDebug ?? false, renderers: o.errorRenderers ?? {} }));
  app.use(prepareRequest(o.kind, o.errorFamilies ?? [], o.urlLimit));
  if (corsSteps) app.use(corsSteps.app);
  app.use(table.dispatch);
  if (o.prepared?.length) listeners.set(app, preparedDispatch(o, o.prepared, app.callback()));
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

/**
 * With TLS: ask clients for a certificate (RFC 8446 §4.3.2) without requiring one, and verify the
 * chain of one that is sent against `ca` (the handlers read the outcome as `socket.authorized`).
 */
export interface ClientCertificateRequest {
  /** PEM of the CAs a client certificate is verified against. */
  ca?: string;
}

/** Serves `app` on plain HTTP, or HTTPS when `tls` holds a certificate and key. */
export function listen(
  app: Koa,
  port: number,
  host: string,
  tls?: TlsMaterial,
  opts: { maxHeaderSize?: number; clientCertificates?: ClientCertificateRequest } = {},
): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const serverOpts = opts.maxHeaderSize ? { maxHeaderSize: opts.maxHeaderSize } : {};
    const peer = opts.clientCertificates;
    // `rejectUnauthorized: false`: a missing or unverifiable certificate never fails the handshake
    // (browsers and bearer-token clients connect as before); the handlers decide what it is worth.
    const peerOpts = peer ? { requestCert: true, rejectUnauthorized: false, ...(peer.ca ? { ca: peer.ca } : {}) } : {};
    const peerCa = peer?.ca ? { ca: peer.ca } : {};
    const server: Server = tls
      ? createHttpsServer({ ...serverOpts, ...peerOpts, cert: tls.cert, key: tls.key }, requestListener(app))
      : createHttpServer(serverOpts, requestListener(app));
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
          ? {
              setTls: (m: TlsMaterial) =>
                (server as HttpsServer).setSecureContext({ ...peerCa, cert: m.cert, key: m.key }),
            }
          : {}),
        close: (graceMs = 10_000) =>
          new Promise<void>((res) => {
            // Stop accepting, let in-flight requests finish, then drop what is left. A keep-alive
            // connection whose request finishes during the grace is closed as soon as it is idle
            // (not after keepAliveTimeout).
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            const idle = setInterval(() => server.closeIdleConnections(), 25);
            server.close(() => {
              clearTimeout(timer);
              clearInterval(idle);
              res();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
