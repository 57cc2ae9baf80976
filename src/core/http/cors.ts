/**
 * Cross-origin resource sharing (the Fetch standard's CORS protocol) as Hydra configures it with
 * `serve.<listener>.cors`: the same keys, defaults and origin patterns. Preflights (`OPTIONS` with
 * `Origin` and `Access-Control-Request-Method`) are answered here with 204 and never reach a route.
 *
 * Origin patterns follow Hydra (gobwas/glob with `.` as separator), matched without regular
 * expressions: the `Origin` (RFC 6454 §6.2 serialization, `scheme://host[:port]`) is parsed once into
 * scheme, host labels (split on `.`) and port, each pattern once the same way, with `{a,b}`
 * alternatives expanded first (at most 64). Scheme and port match exactly, or by the pattern's `*`
 * (any run) and `?` (one character) within that component; a pattern without a port matches only
 * origins without one. The host matches label by label: `*` is exactly one whole label, `**` one or
 * more, `?` one character within a label; `scheme://*` (or `scheme://**`) is any origin of that
 * scheme. Labels are matched by dynamic programming (pattern labels × origin labels steps at most),
 * and an `Origin` over 1,024 bytes or with more than 127 labels matches nothing before any work is
 * done, so no request can make matching slow. A `*` that is not a whole host label
 * (`https://*foo.com`) would match attacker-registrable hosts, so such a pattern is ignored (with a
 * warning at start-up; refused when a client is written).
 *
 * When every origin is allowed (`allowed_origins` empty or `*`), answers carry
 * `Access-Control-Allow-Origin: *` and never `Access-Control-Allow-Credentials`, even with
 * `allow_credentials` on (warned about at start-up): reflecting any origin with credentials would let
 * every site read credentialed answers (Fetch standard, CORS protocol and credentials).
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

/** An `Origin` longer than this (bytes; header values are Latin-1) never matches: no matching work is done. */
export const MAX_ORIGIN_LENGTH = 1024;
/** A host with more labels than this never matches (a DNS name has at most 127). */
export const MAX_ORIGIN_LABELS = 127;
/** A pattern whose `{a,b}` alternatives expand to more patterns than this is ignored. */
const MAX_EXPANSIONS = 64;

/** An origin as the Fetch standard serializes it (RFC 6454 §6.2): scheme, host labels, port. */
interface ParsedOrigin {
  /** The whole origin, lower-cased (for the literal patterns such as `null`). */
  raw: string;
  scheme: string;
  labels: string[];
  /** Digits, or '' when the origin has no port. */
  port: string;
}

/** One host label of a pattern: `*` (one whole label), `**` (one or more), or text where `?` is any character. */
type LabelPattern = { kind: 'one' } | { kind: 'many' } | { kind: 'text'; text: string };

type ParsedPattern =
  | { kind: 'literal'; text: string }
  | {
      kind: 'origin';
      /** Component glob: `*` any run, `?` any character. */
      scheme: string;
      /** `scheme://*`: any host and any port. */
      anyHost: boolean;
      labels: LabelPattern[];
      /** Component glob of the port; undefined: the origin must have no port. */
      port: string | undefined;
    };

/** Characters never part of a serialized origin: such an `Origin` matches nothing. */
const NOT_IN_ORIGIN = /[\s/\\?#@]/;

/** Splits `host[:port]`; undefined when the port is not digits (origins) or the brackets are broken. */
function splitHostPort(rest: string, digitsOnly: boolean): { host: string; port: string | undefined } | undefined {
  let host = rest;
  let port: string | undefined;
  if (rest.startsWith('[')) {
    const end = rest.indexOf(']');
    if (end < 0) return undefined;
    host = rest.slice(0, end + 1);
    const after = rest.slice(end + 1);
    if (after !== '') {
      if (after[0] !== ':') return undefined;
      port = after.slice(1);
    }
  } else {
    const colon = rest.lastIndexOf(':');
    if (colon >= 0) {
      host = rest.slice(0, colon);
      port = rest.slice(colon + 1);
    }
  }
  if (port !== undefined && (port === '' || (digitsOnly && !/^[0-9]+$/.test(port)))) return undefined;
  return { host, port };
}

/**
 * The origin, or undefined when it is too long or has too many labels. Something that is not
 * `scheme://host[:port]` (`null`, a path) keeps only `raw`, for the literal patterns (scheme '').
 */
function parseOrigin(origin: string): ParsedOrigin | undefined {
  if (origin.length > MAX_ORIGIN_LENGTH) return undefined;
  const raw = origin.toLowerCase();
  const sep = raw.indexOf('://');
  const rest = raw.slice(sep + 3);
  if (sep <= 0 || NOT_IN_ORIGIN.test(rest) || NOT_IN_ORIGIN.test(raw.slice(0, sep))) {
    return { raw, scheme: '', labels: [], port: '' };
  }
  const hp = splitHostPort(rest, true);
  if (!hp || hp.host === '') return { raw, scheme: '', labels: [], port: '' };
  const labels = hp.host.split('.', MAX_ORIGIN_LABELS + 1);
  if (labels.length > MAX_ORIGIN_LABELS) return undefined;
  return { raw, scheme: raw.slice(0, sep), labels, port: hp.port ?? '' };
}

/** Index of the `}` closing the `{` at `open`, or -1. */
function closingBrace(p: string, open: number): number {
  let depth = 0;
  for (let i = open; i < p.length; i++) {
    if (p[i] === '{') depth++;
    else if (p[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

/** Top-level comma-separated alternatives of `{…}` contents. */
function alternatives(inner: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === '{') depth++;
    else if (inner[i] === '}') depth--;
    else if (inner[i] === ',' && depth === 0) {
      out.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  out.push(inner.slice(start));
  return out;
}

/** `{a,b}` expanded (nested too) into plain patterns; undefined when unbalanced or more than MAX_EXPANSIONS. */
function expand(p: string): string[] | undefined {
  const open = p.indexOf('{');
  if (open < 0) return p.includes('}') ? undefined : [p];
  const close = closingBrace(p, open);
  if (close < 0) return undefined;
  const head = p.slice(0, open);
  const tails = expand(p.slice(close + 1));
  if (!tails) return undefined;
  const out: string[] = [];
  for (const alt of alternatives(p.slice(open + 1, close))) {
    const alts = expand(alt);
    if (!alts) return undefined;
    for (const a of alts) {
      for (const t of tails) {
        out.push(head + a + t);
        if (out.length > MAX_EXPANSIONS) return undefined;
      }
    }
  }
  return out;
}

const hasWildcard = (s: string) => s.includes('*') || s.includes('?');

/** One expanded (brace-free, lower-cased) pattern, or undefined when it is unsafe or malformed. */
function parsePattern(p: string): ParsedPattern | undefined {
  const sep = p.indexOf('://');
  if (sep < 0) return hasWildcard(p) ? undefined : { kind: 'literal', text: p };
  const scheme = p.slice(0, sep);
  const rest = p.slice(sep + 3);
  if (scheme === '') return undefined;
  const hp = splitHostPort(rest, false);
  if (!hp || hp.host === '') return undefined;
  const parts = hp.host.split('.');
  if (parts.length > MAX_ORIGIN_LABELS) return undefined;
  const labels: LabelPattern[] = [];
  for (const l of parts) {
    if (l === '*') labels.push({ kind: 'one' });
    else if (l === '**') labels.push({ kind: 'many' });
    else if (l.includes('*'))
      return undefined; // not a whole label: could match attacker-registrable hosts
    else labels.push({ kind: 'text', text: l });
  }
  return { kind: 'origin', scheme, anyHost: false, labels, port: hp.port };
}

/**
 * A glob within one component (scheme, port): `*` any run, `?` any character. The two-pointer
 * algorithm, which backs up only to the last `*`: O(pattern × text) at worst, never exponential.
 */
function globComponent(g: string, s: string): boolean {
  let gi = 0;
  let si = 0;
  let star = -1;
  let mark = 0;
  while (si < s.length) {
    if (gi < g.length && (g[gi] === '?' || g[gi] === s[si])) {
      gi++;
      si++;
    } else if (gi < g.length && g[gi] === '*') {
      star = gi++;
      mark = si;
    } else if (star >= 0) {
      gi = star + 1;
      si = ++mark;
    } else return false;
  }
  while (gi < g.length && g[gi] === '*') gi++;
  return gi === g.length;
}

/** A text label (`?` any one character) against an origin label. */
function labelMatches(text: string, label: string): boolean {
  if (text.length !== label.length) return false;
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '?' && text[i] !== label[i]) return false;
  }
  return true;
}

/**
 * Host labels against the pattern's, by dynamic programming over (pattern label, origin label):
 * `ok[j]` tells whether the pattern's labels from `i` on match the origin's from `j` on. At most
 * pattern labels × origin labels steps (each comparing one label), whatever the input.
 */
function hostMatches(pattern: readonly LabelPattern[], labels: readonly string[]): boolean {
  const n = labels.length;
  let next = new Array<boolean>(n + 1).fill(false);
  next[n] = true;
  let cur = new Array<boolean>(n + 1);
  for (let i = pattern.length - 1; i >= 0; i--) {
    const p = pattern[i] as LabelPattern;
    cur[n] = false;
    for (let j = n - 1; j >= 0; j--) {
      const label = labels[j] as string;
      if (p.kind === 'text') cur[j] = (next[j + 1] as boolean) && labelMatches(p.text, label);
      else if (label === '') cur[j] = false;
      else if (p.kind === 'one') cur[j] = next[j + 1] as boolean;
      else cur[j] = (next[j + 1] as boolean) || (cur[j + 1] as boolean);
    }
    [next, cur] = [cur, next];
  }
  return next[0] as boolean;
}

function matches(p: ParsedPattern, o: ParsedOrigin): boolean {
  if (p.kind === 'literal') return p.text === o.raw;
  if (o.scheme === '' || !globComponent(p.scheme, o.scheme)) return false;
  if (p.anyHost) return true;
  if (p.port === undefined ? o.port !== '' : o.port === '' || !globComponent(p.port, o.port)) return false;
  return hostMatches(p.labels, o.labels);
}

/** `scheme://*` (Hydra's rewrite to `scheme://**`) or `scheme://**`: any host, any port. */
const anyHostRest = (rest: string) => rest === '*' || rest === '**';

/** The patterns `pattern` stands for, or undefined when it is ignored (unsafe or malformed). */
function compile(pattern: string): ParsedPattern[] | undefined {
  const p = pattern.toLowerCase();
  const sep = p.indexOf('://');
  if (sep > 0 && anyHostRest(p.slice(sep + 3))) {
    // Decided on the pattern as written: `https://{*,a}` is one label, not any host.
    const schemes = expand(p.slice(0, sep));
    if (!schemes || schemes.includes('')) return undefined;
    return schemes.map((scheme) => ({ kind: 'origin', scheme, anyHost: true, labels: [], port: undefined }));
  }
  const expanded = expand(p);
  if (!expanded) return undefined;
  const parsed: ParsedPattern[] = [];
  for (const e of expanded) {
    const one = parsePattern(e);
    if (!one) return undefined;
    parsed.push(one);
  }
  return parsed;
}

/** True when a `*` in a host is not a whole label (`https://*foo.com`, `https://a*.b.com`, `https://{*x,y}.com`). */
export function isUnsafeWildcard(pattern: string): boolean {
  const p = pattern.toLowerCase();
  const sep = p.indexOf('://');
  if (sep >= 0 && anyHostRest(p.slice(sep + 3))) return false;
  return (expand(p) ?? [p]).some((e) => {
    const at = e.indexOf('://');
    const rest = at >= 0 ? e.slice(at + 3) : e;
    const host = splitHostPort(rest, false)?.host ?? rest;
    return host.split('.').some((label) => label.includes('*') && label !== '*' && label !== '**');
  });
}

/** One origin pattern as a matcher, or undefined when it is ignored (unsafe or malformed). */
export function compileOrigin(pattern: string): OriginMatcher | undefined {
  if (pattern === '*') return () => true;
  const parsed = compile(pattern);
  if (!parsed) return undefined;
  return (origin) => {
    const o = parseOrigin(origin);
    return o !== undefined && parsed.some((p) => matches(p, o));
  };
}

/** Matches against a list of patterns (the origin is parsed once); an empty list allows nothing. */
export function originMatcher(patterns: readonly string[]): OriginMatcher {
  if (patterns.includes('*')) return () => true;
  const parsed = patterns.flatMap((p) => compile(p) ?? []);
  if (parsed.length === 0) return () => false;
  return (origin) => {
    const o = parseOrigin(origin);
    return o !== undefined && parsed.some((p) => matches(p, o));
  };
}

/** Why a pattern is ignored (and refused in a client's `allowed_cors_origins`), or undefined when it is used. */
export function originPatternProblem(pattern: string): string | undefined {
  if (pattern === '*') return undefined;
  if (isUnsafeWildcard(pattern)) {
    return "a '*' that is not a whole host label would match hosts anyone can register; use the form https://*.example.com";
  }
  if (!compile(pattern)) {
    return 'it is not of the form scheme://host[:port], or its {a,b} alternatives are unbalanced or expand to more than 64 patterns';
  }
  return undefined;
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
    const problem = originPatternProblem(o);
    if (problem) log.warn({ pattern: o }, `ignoring CORS origin: ${problem}`);
  }
  if (allowAll && cfg.allow_credentials) {
    log.warn(
      { allowed_origins: cfg.allowed_origins },
      'CORS allow_credentials is ignored: allowed_origins allows every origin, which is answered with Access-Control-Allow-Origin: * and no credentials; list the origins that may send credentials',
    );
  }
  const configured = allowAll ? () => true : originMatcher(cfg.allowed_origins);
  const methods = upper(cfg.allowed_methods);
  const headers = lower(cfg.allowed_headers);
  const exposed = cfg.exposed_headers.join(', ');
  const trace = (ctx: Context, msg: string) => {
    if (cfg.debug) (ctx.state.log as Logger | undefined)?.debug({ path: ctx.path, method: ctx.method }, `cors: ${msg}`);
  };
  /**
   * Every origin allowed: `*`, never with credentials (a reflected origin with credentials would let
   * any site read credentialed answers). Otherwise the (listed) origin itself, with credentials when
   * `allow_credentials` is on.
   */
  const allowOrigin = (ctx: Context, origin: string) => {
    if (allowAll) {
      ctx.set('Access-Control-Allow-Origin', '*');
      return;
    }
    ctx.set('Access-Control-Allow-Origin', origin);
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
