/**
 * Cross-origin resource sharing (the Fetch standard's CORS protocol) as Hydra configures it with
 * `serve.<listener>.cors`: the same keys, defaults and origin patterns. Preflights (`OPTIONS` with
 * `Origin` and `Access-Control-Request-Method`) are answered here with 204 and never reach a route.
 *
 * Origin patterns follow Hydra (gobwas/glob with `.` as separator): `*` matches within one DNS
 * label, `**` across labels, `scheme://*` any origin of that scheme. A `*` that is not a whole host
 * label (`https://*foo.com`) would match attacker-registrable hosts, so such a pattern is ignored.
 *
 * Routes may add per-client origins (`perClient`): on those routes an origin not allowed by the
 * configuration is allowed when the OAuth 2.0 client behind the request's credentials lists it in
 * `allowed_cors_origins`; their preflights are allowed for any origin, as preflights carry no
 * credentials.
 */
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from '../log.ts';

export interface CorsConfig {
  enabled: boolean;
  allowed_origins: readonly string[];
  allowed_methods: readonly string[];
  allowed_headers: readonly string[];
  exposed_headers: readonly string[];
  allow_credentials: boolean;
  max_age: number;
  debug: boolean;
}

export interface PerClientCors {
  /** `allowed_cors_origins` of the client the request's credentials name; empty when none. */
  origins(ctx: Context): Promise<readonly string[]>;
}

export type OriginMatcher = (origin: string) => boolean;

const escapeRe = (s: string) => s.replace(/[.+^$()|[\]\\/]/g, '\\$&');

/** True when a `*` in the host is not a whole label (`https://*foo.com`, `https://a*.b.com`). */
export function isUnsafeWildcard(pattern: string): boolean {
  const rest = pattern.includes('://') ? pattern.slice(pattern.indexOf('://') + 3) : pattern;
  const host = rest.replace(/:[^:]*$/, '');
  return host.split('.').some((label) => label.includes('*') && label !== '*' && label !== '**');
}

/** One origin pattern as a matcher, or undefined when it is ignored (unsafe or malformed). */
export function compileOrigin(pattern: string): OriginMatcher | undefined {
  let p = pattern.toLowerCase();
  if (p === '*') return () => true;
  const sep = p.indexOf('://');
  if (sep >= 0 && p.slice(sep + 3) === '*') p = `${p.slice(0, sep)}://**`;
  else if (isUnsafeWildcard(p)) return undefined;
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const ch = p[i] as string;
    if (ch === '*') {
      if (p[i + 1] === '*') {
        re += '.*';
        i++;
      } else re += '[^.]*';
    } else if (ch === '?') re += '[^.]';
    else if (ch === '{') {
      const end = p.indexOf('}', i);
      if (end < 0) return undefined;
      re += `(?:${p
        .slice(i + 1, end)
        .split(',')
        .map(escapeRe)
        .join('|')})`;
      i = end;
    } else re += escapeRe(ch);
  }
  const rx = new RegExp(`^${re}$`);
  return (origin) => rx.test(origin.toLowerCase());
}

/** Matches against a list of patterns; an empty list allows nothing. */
export function originMatcher(patterns: readonly string[]): OriginMatcher {
  const ms = patterns.map(compileOrigin).filter((m): m is OriginMatcher => m !== undefined);
  return (origin) => ms.some((m) => m(origin));
}

const upper = (xs: readonly string[]) => new Set(xs.map((x) => x.toUpperCase()));
const lower = (xs: readonly string[]) => new Set(xs.map((x) => x.toLowerCase()));

/**
 * The CORS middleware of a listener (`app`, before routing: preflights end there, configured origins
 * get their headers) and the step of routes with per-client origins (`perClient`, run by the route
 * policy layer after the body is read, since the form names the client). `covers` tells whether the
 * route a preflight asks for (path and `Access-Control-Request-Method`) takes per-client origins.
 */
export function corsMiddleware(
  cfg: CorsConfig,
  log: Logger,
  perClient?: PerClientCors & { covers(path: string, method: string): boolean },
): { app: Middleware; perClient: Middleware | undefined } {
  const pass: Middleware = (_ctx, next) => next();
  if (!cfg.enabled) return { app: pass, perClient: undefined };
  const allowAll = cfg.allowed_origins.length === 0 || cfg.allowed_origins.includes('*');
  for (const o of cfg.allowed_origins) {
    if (o !== '*' && compileOrigin(o) === undefined) {
      log.warn({ pattern: o }, 'ignoring CORS origin with an unbounded wildcard; use the form https://*.example.com');
    }
  }
  const configured = allowAll ? () => true : originMatcher(cfg.allowed_origins);
  const methods = upper(cfg.allowed_methods);
  const headers = lower(cfg.allowed_headers);
  const exposed = cfg.exposed_headers.join(', ');
  const trace = (ctx: Context, msg: string) => {
    if (cfg.debug) (ctx.state.log as Logger | undefined)?.debug({ path: ctx.path, method: ctx.method }, `cors: ${msg}`);
  };
  /** `*` only when every origin is allowed and no credentials are; otherwise the origin itself. */
  const allowOrigin = (ctx: Context, origin: string) => {
    ctx.set('Access-Control-Allow-Origin', allowAll && !cfg.allow_credentials ? '*' : origin);
    if (cfg.allow_credentials) ctx.set('Access-Control-Allow-Credentials', 'true');
  };

  const app = async function cors(ctx: Context, next: Next) {
    const origin = ctx.get('origin');
    const requested = ctx.get('access-control-request-method');
    if (ctx.method === 'OPTIONS' && requested) {
      // Preflight: answered here, whatever the route.
      ctx.vary('Origin');
      ctx.vary('Access-Control-Request-Method');
      ctx.vary('Access-Control-Request-Headers');
      ctx.status = 204;
      if (!origin) return trace(ctx, 'preflight without Origin');
      if (!configured(origin) && !perClient?.covers(ctx.path, requested.toUpperCase())) {
        return trace(ctx, 'preflight origin not allowed');
      }
      if (!methods.has(requested.toUpperCase())) return trace(ctx, 'preflight method not allowed');
      const asked = ctx
        .get('access-control-request-headers')
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean);
      if (asked.some((h) => h.toLowerCase() !== 'origin' && !headers.has(h.toLowerCase()))) {
        return trace(ctx, 'preflight headers not allowed');
      }
      allowOrigin(ctx, origin);
      ctx.set('Access-Control-Allow-Methods', requested.toUpperCase());
      if (asked.length) ctx.set('Access-Control-Allow-Headers', asked.join(', '));
      if (cfg.max_age > 0) ctx.set('Access-Control-Max-Age', String(cfg.max_age));
      return trace(ctx, 'preflight allowed');
    }

    ctx.vary('Origin');
    if (!origin) return next();
    if (!methods.has(ctx.method.toUpperCase())) {
      trace(ctx, 'method not allowed');
      return next();
    }
    if (configured(origin)) {
      allowOrigin(ctx, origin);
      if (exposed) ctx.set('Access-Control-Expose-Headers', exposed);
      trace(ctx, 'origin allowed');
    } else {
      // A route with per-client origins may still allow it, once its body is read.
      ctx.state.corsPendingOrigin = origin;
      trace(ctx, 'origin not allowed by the configuration');
    }
    return next();
  };

  const clientStep = perClient
    ? async function perClientCors(ctx: Context, next: Next) {
        const origin = ctx.state.corsPendingOrigin as string | undefined;
        if (origin && originMatcher(await perClient.origins(ctx))(origin)) {
          allowOrigin(ctx, origin);
          if (exposed) ctx.set('Access-Control-Expose-Headers', exposed);
          trace(ctx, "origin allowed by the client's allowed_cors_origins");
        }
        return next();
      }
    : undefined;
  return { app, perClient: clientStep };
}
