/**
 * Route tables and the one policy layer in front of every handler.
 *
 * Every route of every listener is declared with a policy: who may call it (`access`, the name of a
 * guard the listener registers) and which request bodies it takes (`body`). A listener matches a
 * request once, against its one table; the route that matched brings its policy, and the gate built
 * from that policy runs before any handler of that route: body types (415 otherwise), CORS for the
 * route's origins, the failed-authentication limiter, then the guard. There is no prefix middleware
 * that could match paths differently from the table, and no handler is reachable without its gate.
 *
 * Matching is case-sensitive and strict, on the canonical path (`canonicalPath`, set once before
 * anything reads the path): RFC 3986 §6.2.2 normalisation (percent-encoded unreserved characters
 * decoded, dot segments removed), empty segments (`//`) dropped and a trailing slash removed. So
 * `/a//b/`, `/a/./b` and `/%61/b` are `/a/b`, while `/A/b` names no route and `%2F` stays data of
 * one segment.
 *
 * A table that names an access kind without a guard, a body type that does not exist, or the same
 * method and path twice fails at start-up.
 */
import Router, { type Layer } from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { koaBody } from 'koa-body';
import { AppError, HERODOT } from '../errors.ts';
import type { FailedAuthTarget } from './auth-failures.ts';
import { plainError } from './errors.ts';

/** Request body types a route may take by name; each is a set of media types. */
export const BODY_TYPES = {
  /** JSON (`application/json`). */
  json: ['application/json'],
  /** JSON Merge Patch (RFC 7396). */
  'merge-patch': ['application/merge-patch+json'],
  /** JSON Patch (RFC 6902). */
  'json-patch': ['application/json-patch+json'],
  /** HTML forms (`application/x-www-form-urlencoded`): OAuth 2.0 endpoints and the console only. */
  form: ['application/x-www-form-urlencoded'],
} as const satisfies Record<string, readonly string[]>;

/**
 * A JSON body under a media type of its own, with the `+json` structured syntax suffix (RFC 6839
 * §3.1), declared by the domain whose routes take it; such a route takes `application/json` too.
 * `label` names it in the route table of docs/security.md.
 */
export interface JsonMediaType {
  readonly media: `application/${string}+json`;
  readonly label: string;
}

export type BodyType = keyof typeof BODY_TYPES | JsonMediaType;

/** The JSON family: a body of one of these may be sent without `Content-Type` by a non-browser caller. */
const JSON_BODIES: ReadonlySet<BodyType> = new Set(['json', 'merge-patch', 'json-patch']);
const isJson = (t: BodyType) => typeof t === 'object' || JSON_BODIES.has(t);
const mediaOf = (t: BodyType): readonly string[] =>
  typeof t === 'object' ? [t.media, 'application/json'] : BODY_TYPES[t];
const MEDIA_TYPE = /^application\/[a-z0-9][a-z0-9!#$&^_.-]*\+json$/;

/** Media types a browser may send across origins without a preflight (Fetch standard, CORS-safelisted). */
const SIMPLE_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

export type RouteMethod = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'all';

export interface RoutePolicy {
  /**
   * Who may call the route: `public`, or the name of a guard the listener registers (`admin`,
   * `api-key`, `operator`, …). A guard is Koa middleware: it calls `next()` to let the request through,
   * throws to refuse it, or answers itself (a redirect to a sign-in page).
   */
  access: string;
  /** Body types taken by POST, PUT and PATCH; none: the route reads no body. */
  body?: readonly BodyType[];
  /** Largest body, by the listener's limit names (`default` when absent). */
  bodyLimit?: string;
  /** CORS: `per-client` also allows the origins of the OAuth 2.0 client behind the request. */
  cors?: 'per-client';
  /** Failed authentications of this route are counted and limited (core/http/auth-failures.ts). */
  failedAuth?: FailedAuthTarget;
  /**
   * The permission family the route belongs to, for guards that grant access by family (the admin
   * API's `clients`, `keys`, …: core/http/admin-auth.ts). Required on, and only on, the routes of
   * such a guard, and one of its `families`; checked at start-up.
   */
  family?: string;
}

export interface DeclaredRoute {
  method: RouteMethod;
  /** koa-router syntax, the full path (`/admin/clients/:id`). */
  path: string;
  policy: RoutePolicy;
  /** Middleware run after the gate: the group's wrappers, then the handlers. */
  handlers: readonly Middleware[];
  /** The OpenAPI tag of the route's group. */
  tag: string;
  /** Operation name for documents: the handler's function name when it has one. */
  name?: string | undefined;
}

type PolicyPatch = Partial<RoutePolicy>;
type Arg = Middleware | PolicyPatch;

/** Registers routes under a prefix with a policy; `r.get(path, [policyPatch,] ...handlers)`. */
export interface Registrar {
  get(path: string, ...args: Arg[]): Registrar;
  post(path: string, ...args: Arg[]): Registrar;
  put(path: string, ...args: Arg[]): Registrar;
  patch(path: string, ...args: Arg[]): Registrar;
  delete(path: string, ...args: Arg[]): Registrar;
  all(path: string, ...args: Arg[]): Registrar;
  /** A sub-group: a longer prefix, a changed policy, more wrappers. */
  group(o: GroupOptions): Registrar;
  /** The full path of `path` in this group. */
  pathOf(path: string): string;
}

export interface GroupOptions extends PolicyPatch {
  prefix?: string;
  /** Middleware run after the gate, before each handler of the group (e.g. an error page renderer). */
  wrap?: readonly Middleware[];
  tag?: string;
}

/** `/api/v1/dsync` + `/` → `/api/v1/dsync`; joins without doubling slashes. */
function joinPath(prefix: string, path: string): string {
  const p = `${prefix}${path === '/' && prefix ? '' : path}`;
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p || '/';
}

/** The routes one listener serves, declared through registrars. */
export class RouteTable {
  readonly routes: DeclaredRoute[] = [];

  /** A registrar whose routes all carry `policy` (and its prefix, wrappers and tag). */
  group(o: GroupOptions & { access: string }): Registrar {
    return this.#registrar({ tag: 'default', ...o });
  }

  #registrar(o: GroupOptions & { access: string }): Registrar {
    const { prefix = '', wrap = [], tag = 'default', ...policy } = o;
    const add =
      (method: RouteMethod) =>
      (path: string, ...args: Arg[]) => {
        let p: RoutePolicy = { ...policy } as RoutePolicy;
        const handlers: Middleware[] = [];
        for (const a of args) {
          if (typeof a === 'function') handlers.push(a);
          else p = { ...p, ...a };
        }
        if (!handlers.length) throw new Error(`route ${method.toUpperCase()} ${joinPath(prefix, path)}: no handler`);
        const last = handlers[handlers.length - 1]?.name;
        this.routes.push({
          method,
          path: joinPath(prefix, path),
          policy: p,
          handlers: [...wrap, ...handlers],
          tag,
          name: last && last !== 'anonymous' && !last.startsWith('bound ') ? last : undefined,
        });
        return reg;
      };
    const reg: Registrar = {
      get: add('get'),
      post: add('post'),
      put: add('put'),
      patch: add('patch'),
      delete: add('delete'),
      all: add('all'),
      group: (g) =>
        this.#registrar({
          ...policy,
          ...g,
          prefix: joinPath(prefix, g.prefix ?? ''),
          wrap: [...wrap, ...(g.wrap ?? [])],
          tag: g.tag ?? tag,
          access: g.access ?? policy.access,
        }),
      pathOf: (path) => joinPath(prefix, path),
    };
    return reg;
  }
}

// ---- the canonical path -------------------------------------------------------------------------

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** One segment with percent-encoded unreserved characters decoded and other escapes in upper case. */
function normalSegment(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/%([0-9A-Fa-f]{2})/g, (m, hex: string) => {
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : m.toUpperCase();
  });
}

/**
 * The path every later step reads: RFC 3986 §6.2.2.1–3 (percent-encoding and dot-segment
 * normalisation), empty segments dropped, no trailing slash. Case is kept: paths are case-sensitive.
 */
export function canonicalPath(path: string): string {
  if (
    !path.includes('//') &&
    !path.includes('%') &&
    !path.includes('/.') &&
    (path.length === 1 || !path.endsWith('/'))
  ) {
    return path;
  }
  const out: string[] = [];
  for (const raw of path.split('/')) {
    const seg = normalSegment(raw);
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}

/**
 * The path for the request log when no route matched: segments of 20 characters or more (a token, a
 * secret, an id someone pasted) are replaced by `…`. A matched request logs its route template.
 */
export function loggablePath(path: string): string {
  return path.replace(/[^/]{20,}/g, '…');
}

// ---- the listener -------------------------------------------------------------------------------

export interface ListenerRoutes {
  /** The route table's one dispatch: match, gate, handlers; unmatched requests go on to `next`. */
  dispatch: Middleware;
  /** The route `method path` matches, if any (`HEAD` matches `GET` routes). */
  match(path: string, method: string): DeclaredRoute | undefined;
  routes: readonly DeclaredRoute[];
}

/** What an access name stands for, and its check. */
export interface Guard {
  /** Who may call, in words (the route-policy table in docs/security.md). */
  description: string;
  /**
   * The check, run before the route's handlers: it calls `next()` to let the request through, throws
   * to refuse it, or answers itself (a redirect to a sign-in page). Absent when the endpoint verifies
   * the credential itself, as its protocol prescribes (OAuth 2.0 client authentication, RFC 6749
   * §2.3; bearer tokens, RFC 6750), so that refusals keep the protocol's order and error shape.
   */
  check?: Middleware;
  /** The check reads the body (a form's CSRF token): it runs after the body step instead of before it. */
  readsBody?: boolean;
  /** Anyone who reaches the listener passes (the admin API until it is locked). */
  open?: boolean;
  /** The families its routes are divided into: each of its routes declares one of them (`RoutePolicy.family`). */
  families?: readonly string[];
  /**
   * Its failures (401) are counted and limited: the limiter runs right before the check. For guards
   * whose credential is in the headers; one that reads the body is limited by its routes' `failedAuth`.
   */
  failedAuth?: FailedAuthTarget;
}

export interface ListenerOptions {
  /** Guards by access name; `public` is built in. */
  guards: Readonly<Record<string, Guard>>;
  /** Body limits in bytes by name; `default` is required. */
  bodyLimits: Readonly<Record<string, number | string>> & { default: number | string };
  /** CORS of an actual (not preflight) request on a `cors: per-client` route, after the body is read. */
  perClientCors?: Middleware;
  /** The failed-authentication limiter of routes that declare `failedAuth`. */
  failedAuth?: (target: FailedAuthTarget) => Middleware;
}

const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Koa-compose: runs `fns` in order, each calling the next. */
function compose(fns: readonly Middleware[]): Middleware {
  return (ctx, next) => {
    let index = -1;
    const run = (i: number): Promise<void> => {
      if (i <= index) return Promise.reject(new Error('next() called twice'));
      index = i;
      const fn = i === fns.length ? next : fns[i];
      if (!fn) return Promise.resolve();
      try {
        return Promise.resolve(fn(ctx, () => run(i + 1)));
      } catch (e) {
        return Promise.reject(e);
      }
    };
    return run(0);
  };
}

function unsupported(ctx: Context, accepted: readonly BodyType[]): AppError {
  const types = [...new Set(accepted.flatMap(mediaOf))];
  const description = types.length
    ? `The request body must be ${types.join(' or ')}.`
    : 'This endpoint takes no request body of this type.';
  return plainError(
    ctx,
    415,
    description,
    () =>
      new AppError({ status: 415, code: HERODOT.badRequest, description: `Unsupported content type. ${description}` }),
  );
}

const hasBody = (ctx: Context) =>
  ctx.get('transfer-encoding') !== '' || (ctx.get('content-length') !== '' && ctx.get('content-length') !== '0');

/**
 * The body step of the gate: a body of a type the route does not take is 415 (form, multipart and
 * `text/plain`, which browsers send across origins without a preflight, only where declared); a
 * JSON route also reads a body without `Content-Type` as JSON when the request has no `Origin`
 * (non-browser clients post so; a browser always sends `Origin` on a cross-origin POST).
 */
function bodyStep(route: DeclaredRoute, limit: number | string): Middleware {
  const accepted = route.policy.body ?? [];
  const json = accepted.filter(isJson).flatMap(mediaOf);
  const form = accepted.includes('form');
  const mediaTypes = [...new Set(accepted.flatMap(mediaOf))];
  const parse = accepted.length
    ? koaBody({
        json: json.length > 0,
        jsonTypes: json.length ? [...new Set(json)] : ['application/json'],
        jsonStrict: true,
        jsonLimit: limit,
        urlencoded: form,
        formLimit: limit,
        text: false,
        multipart: false,
      })
    : undefined;
  return async function routeBody(ctx: Context, next: Next) {
    if (!PARSED_METHODS.has(ctx.method)) return next();
    const type = ctx.get('content-type');
    if (!type) {
      if (!hasBody(ctx)) return next();
      // A browser sends an untyped body (a Blob) across origins without a preflight, too.
      if (ctx.get('origin')) throw unsupported(ctx, accepted);
      if (!parse) return next();
      if (!json.length) throw unsupported(ctx, accepted);
      ctx.request.headers['content-type'] = 'application/json';
      return parse(ctx, next);
    }
    if (!parse) {
      // A route that reads no body ignores a JSON one (SDKs send `{}`) and refuses the simple types.
      if (ctx.is(SIMPLE_TYPES) && hasBody(ctx)) throw unsupported(ctx, accepted);
      return next();
    }
    if (!ctx.is(mediaTypes)) {
      if (!hasBody(ctx)) return next();
      throw unsupported(ctx, accepted);
    }
    return parse(ctx, next);
  };
}

/** A route of a guard with families declares one of them; no other route declares one. @throws at start-up otherwise */
function checkFamily(where: string, family: string | undefined, guard: Guard | undefined): void {
  const families = guard?.families;
  if (families && (family === undefined || !families.includes(family))) {
    throw new Error(`${where}: declares no family of its guard (${families.join(', ')})`);
  }
  if (!families && family !== undefined) throw new Error(`${where}: family '${family}' but its guard has none`);
}

/** Checks a table and builds its dispatch. @throws at start-up on a policy without a guard, an unknown body type or a duplicate route */
export function listenerRoutes(routes: readonly DeclaredRoute[], o: ListenerOptions): ListenerRoutes {
  const router = new Router({ sensitive: true, strict: true });
  const byLayer = new Map<Layer, { route: DeclaredRoute; run: Middleware }>();
  const seen = new Set<string>();
  for (const route of routes) {
    const where = `route ${route.method.toUpperCase()} ${route.path}`;
    const key = `${route.method} ${route.path}`;
    if (seen.has(key)) throw new Error(`${where}: declared twice`);
    seen.add(key);
    const { access, body = [], bodyLimit = 'default' } = route.policy;
    if (typeof access !== 'string' || !access) throw new Error(`${where}: no access policy`);
    const guard = access === 'public' ? undefined : o.guards[access];
    if (access !== 'public' && !guard) throw new Error(`${where}: no guard for access '${access}'`);
    for (const t of body)
      if (typeof t === 'object' ? !MEDIA_TYPE.test(t.media) : !Object.hasOwn(BODY_TYPES, t))
        throw new Error(`${where}: unknown body type '${typeof t === 'object' ? t.media : t}'`);
    const limit = o.bodyLimits[bodyLimit];
    if (limit === undefined) throw new Error(`${where}: unknown body limit '${bodyLimit}'`);
    if ((route.policy.failedAuth || guard?.failedAuth) && !o.failedAuth) {
      throw new Error(`${where}: no failed-authentication limiter`);
    }
    checkFamily(where, route.policy.family, guard);
    // A guard that needs no body refuses before the body is read; the limiter counts what the
    // endpoint refuses (it reads the claimed client from the body).
    const gate: Middleware[] = [];
    if (guard?.failedAuth && o.failedAuth) gate.push(o.failedAuth(guard.failedAuth));
    if (guard?.check && !guard.readsBody) gate.push(guard.check);
    gate.push(bodyStep(route, limit));
    if (route.policy.cors === 'per-client' && o.perClientCors) gate.push(o.perClientCors);
    if (route.policy.failedAuth && o.failedAuth) gate.push(o.failedAuth(route.policy.failedAuth));
    if (guard?.check && guard.readsBody) gate.push(guard.check);
    const run = compose([...gate, ...route.handlers]);
    const methods = route.method === 'all' ? router.methods : [route.method.toUpperCase()];
    // The layer's own stack is never run: dispatch runs `run`, found from the layer that matched.
    const layer = router.register(route.path, methods, [() => undefined], {});
    const layers = Array.isArray(layer) ? layer : [layer];
    for (const l of layers as Layer[]) byLayer.set(l, { route, run });
  }
  for (const l of router.stack) {
    if (!byLayer.has(l)) throw new Error(`route ${String(l.path)}: registered without a policy`);
  }

  const first = (path: string, method: string) => {
    const m = router.match(path, method);
    for (const l of m.pathAndMethod) {
      const hit = byLayer.get(l);
      if (hit && l.methods.length) return { layer: l, hit, m };
    }
    return { layer: undefined, hit: undefined, m };
  };

  return {
    routes,
    match(path, method) {
      return first(path, method).hit?.route;
    },
    dispatch: async function routeDispatch(ctx: Context, next: Next) {
      const path = ctx.path;
      const { layer, hit, m } = first(path, ctx.method);
      if (!layer || !hit) {
        const allowed = [...new Set(m.path.flatMap((l) => l.methods))];
        if (!allowed.length) return next();
        // The path exists, the method does not: OPTIONS lists the methods, anything else is 405.
        ctx.set('Allow', allowed.join(', '));
        if (ctx.method === 'OPTIONS') {
          ctx.status = 200;
          ctx.body = '';
          return;
        }
        ctx.status = 405; // rendered in the family's shape by the error middleware
        return;
      }
      ctx.params = layer.params(path, layer.captures(path), {});
      (ctx as { _matchedRoute?: string })._matchedRoute = hit.route.path;
      ctx.state.route = hit.route;
      return hit.run(ctx, next);
    },
  };
}

// ---- the route-policy table of docs/security.md ----------------------------------------------------

const MEDIA_LABEL: Record<keyof typeof BODY_TYPES, string> = {
  json: 'JSON',
  'merge-patch': 'JSON Merge Patch',
  'json-patch': 'JSON Patch',
  form: 'form',
};

/** Markdown of every listener's access names and routes (the drift test keeps docs/security.md equal to it). */
export function routePolicyMarkdown(
  listeners: Readonly<Record<string, { routes: readonly DeclaredRoute[]; guards: Readonly<Record<string, Guard>> }>>,
): string {
  const access = new Map<string, { guard: Guard | undefined; listeners: Set<string> }>();
  const rows: string[] = [];
  for (const [name, l] of Object.entries(listeners)) {
    for (const r of l.routes) {
      const a = r.policy.access;
      const entry = access.get(a) ?? { guard: l.guards[a], listeners: new Set<string>() };
      entry.listeners.add(name);
      access.set(a, entry);
      const reads = r.method !== 'get' && r.method !== 'delete';
      const body =
        (reads ? (r.policy.body ?? []) : [])
          .map((t) => (typeof t === 'object' ? t.label : MEDIA_LABEL[t]))
          .join(', ') || '—';
      const extra = [
        r.policy.family ? `family \`${r.policy.family}\`` : '',
        r.policy.cors === 'per-client' ? 'client CORS' : '',
        r.policy.failedAuth || l.guards[a]?.failedAuth ? 'rate limited' : '',
      ]
        .filter(Boolean)
        .join(', ');
      rows.push(`| ${name} | ${r.method.toUpperCase()} | \`${r.path}\` | \`${a}\` | ${body} | ${extra} |`);
    }
  }
  const names = [...access.entries()].map(([name, e]) => {
    const who = name === 'public' ? 'Anyone.' : (e.guard?.description ?? '');
    const where = name === 'public' || e.guard?.open ? '—' : e.guard?.check ? 'policy layer' : 'endpoint';
    return `| \`${name}\` | ${who.replaceAll('|', '\\|')} | ${where} | ${[...e.listeners].join(', ')} |`;
  });
  return [
    '| access | who may call | checked by | listeners |',
    '|---|---|---|---|',
    ...names,
    '',
    '| listener | method | path | access | bodies | also |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
