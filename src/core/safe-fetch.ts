/**
 * The only outbound HTTP client of gatehouse (jwks_uri, sector_identifier_uri, request_uri,
 * back-channel logout, token hook, webhooks, Google APIs). Every request:
 * - resolves the host itself (through the injectable `resolver`) and, when internal ranges are
 *   refused, checks every address it got (see address-policy.ts);
 * - connects to exactly the addresses it checked (a `lookup` that answers with them), so a second
 *   DNS answer can never redirect the connection (no DNS-rebinding window);
 * - follows redirects itself and checks every hop again;
 * - is bounded in time (connect and total, DNS included) and in response size.
 * Errors are `SafeFetchError`s with a `code`; their messages name the host but never an address,
 * and an IP-literal host is not printed at all. The same holds for what it logs.
 */

import { lookup as dnsLookup } from 'node:dns/promises';
import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIPv6 } from 'node:net';
import { VERSION } from '../version.ts';
import {
  addressRange,
  bareHost,
  describeHost,
  inRanges,
  isLocalhostName,
  printableHost,
  scrubAddresses,
} from './address-policy.ts';
import type { Logger } from './log.ts';
import { inSpan, SpanKind } from './observability/tracing.ts';

export type SafeFetchErrorCode =
  | 'invalid_url'
  | 'blocked_address'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects'
  | 'network'
  | 'invalid_response';

export class SafeFetchError extends Error {
  override name = 'SafeFetchError';
  readonly code: SafeFetchErrorCode;
  /** The target as messages name it (`host api.example.com` / `an IP-literal host`), never an address. */
  readonly host: string;
  constructor(code: SafeFetchErrorCode, host: string, message: string) {
    super(scrubAddresses(message)); // belt and braces: messages are built address-free
    this.code = code;
    this.host = host;
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a hostname to every address it has (the seam tests use to resolve names inward). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, order: 'verbatim' })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

export interface SafeFetchOptions {
  /** Refuse loopback, private, link-local, unique-local, multicast, reserved … addresses. */
  disallowPrivate: boolean;
  /**
   * URLs exempt from the refusal, matched against `scheme://host[:port]/path` (query ignored);
   * `*` matches within one path segment (Hydra's `clients.http.private_ip_exception_urls`).
   */
  allowList?: readonly string[];
  /** CIDR ranges treated as public even when internal ranges are refused (a known internal service). */
  allowedRanges?: readonly string[];
  /** Whole request, DNS and redirects and body included (default 10 s). */
  timeoutMs?: number;
  /** TCP connect of one hop (default 5 s, never more than what is left of `timeoutMs`). */
  connectTimeoutMs?: number;
  /** Largest response body read (default 1 MiB). */
  maxBytes?: number;
  /** Redirects followed (default 5). */
  maxRedirects?: number;
  resolver?: Resolver;
  log?: Logger;
  userAgent?: string;
  /** Extra trusted CA certificates for https (a private PKI; tests). The system store is used otherwise. */
  ca?: string | Buffer;
}

export interface SafeFetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** `follow` (default) re-checks and follows each redirect; `manual` returns the 3xx as is. */
  redirect?: 'follow' | 'manual';
  timeoutMs?: number;
  maxBytes?: number;
  signal?: AbortSignal;
  /**
   * Connections to reuse (`createKeepAlive`): the caller owns them and destroys them when done. A
   * reused connection goes to an address that passed the check when it was opened; every request
   * is still checked (resolved, refused when internal) before it is sent.
   */
  keepAlive?: KeepAlive | undefined;
}

export interface KeepAlive {
  http: http.Agent;
  https: https.Agent;
  destroy(): void;
}

/** A pool of keep-alive connections for a run of requests to one receiver (one socket per origin). */
export function createKeepAlive(): KeepAlive {
  const opts = { keepAlive: true, maxSockets: 1, maxFreeSockets: 1, keepAliveMsecs: 1000 };
  const h = new http.Agent(opts);
  const s = new https.Agent(opts);
  return {
    http: h,
    https: s,
    destroy() {
      h.destroy();
      s.destroy();
    },
  };
}

/** The response, its body already read within the size limit. */
export interface SafeResponse {
  status: number;
  /** Lower-cased names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The URL that answered (after redirects). */
  url: string;
  redirects: number;
  body: Buffer;
  text(): string;
  /** Throws `SafeFetchError` `invalid_response` when the body is not JSON. */
  json<T = unknown>(): T;
}

export type SafeFetch = ((url: string | URL, init?: SafeFetchInit) => Promise<SafeResponse>) & {
  /**
   * Checks a URL against the address policy without sending anything (client metadata validation).
   * Throws `SafeFetchError` (`blocked_address`, `invalid_url`, `network`, `timeout`).
   */
  check(url: string | URL): Promise<void>;
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const exceptionKey = (u: URL) => `${u.protocol}//${u.host}${u.pathname}`;

function exceptionMatcher(patterns: readonly string[]): (u: URL) => boolean {
  const res = patterns
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      if (!p.includes('*') && URL.canParse(p)) return new RegExp(`^${escapeRe(exceptionKey(new URL(p)))}$`);
      return new RegExp(`^${p.split('*').map(escapeRe).join('[^/]*')}$`);
    });
  return (u) => res.some((re) => re.test(exceptionKey(u)));
}

function parseTarget(input: string | URL, base?: URL): URL {
  let u: URL;
  try {
    u = new URL(String(input), base);
  } catch {
    throw new SafeFetchError('invalid_url', 'an invalid URL', 'outbound request refused: the URL is not valid');
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
    throw new SafeFetchError('invalid_url', 'an unsupported URL', 'outbound request refused: only http(s) URLs');
  }
  return u;
}

const errnoCode = (e: unknown): string => {
  const c = (e as { code?: unknown }).code;
  return typeof c === 'string' && /^[A-Z0-9_]{1,40}$/.test(c) ? c : 'error';
};

/** Rejects when `signal` aborts first (the resolver seam need not know about signals). */
function raced<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((res, rej) => {
    const onAbort = () => rej(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(res, rej).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function flattenHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

async function readBody(res: IncomingMessage, maxBytes: number, label: string): Promise<Buffer> {
  const tooLarge = () => new SafeFetchError('too_large', label, `the response of ${label} exceeds ${maxBytes} bytes`);
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      res.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

interface Hop {
  url: URL;
  method: string;
  headers: OutgoingHttpHeaders;
  body: string | Uint8Array | undefined;
  addresses: ResolvedAddress[];
  label: string;
  connectTimeoutMs: number;
  signal: AbortSignal;
  ca: string | Buffer | undefined;
  keepAlive: KeepAlive | undefined;
}

/** One request over a connection to one of the checked addresses (never a fresh DNS answer). */
function send(h: Hop): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const first = h.addresses[0] as ResolvedAddress;
    const lookup: LookupFunction = (_name, opts, cb) => {
      if (opts.all) cb(null, h.addresses);
      else cb(null, first.address, first.family);
    };
    const secure = h.url.protocol === 'https:';
    const mod = secure ? https : http;
    // A fresh connection per request unless the caller brought a keep-alive pool for this run.
    const agent = h.keepAlive ? (secure ? h.keepAlive.https : h.keepAlive.http) : false;
    const req = mod.request({
      method: h.method,
      hostname: bareHost(h.url.hostname).host,
      port: h.url.port || undefined,
      path: `${h.url.pathname}${h.url.search}`,
      headers: h.headers,
      lookup,
      agent,
      signal: h.signal,
      ...(h.ca ? { ca: h.ca } : {}),
      ...(h.url.username
        ? { auth: `${decodeURIComponent(h.url.username)}:${decodeURIComponent(h.url.password)}` }
        : {}),
    });
    req.once('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        req.destroy(
          new SafeFetchError(
            'timeout',
            h.label,
            `${h.label} did not accept a connection within ${h.connectTimeoutMs} ms`,
          ),
        );
      }, h.connectTimeoutMs);
      const clear = () => clearTimeout(timer);
      socket.once('connect', clear);
      socket.once('close', clear);
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(h.body);
  });
}

/**
 * The guarded outbound client: every request's addresses are resolved and checked before it is
 * sent, and again at each redirect.
 * Long: the resolution, the address policy and the redirect loop share one set of options and one
 * traced entry point.
 */
export function createSafeFetch(o: SafeFetchOptions): SafeFetch {
  const resolver = o.resolver ?? systemResolver;
  const isException = exceptionMatcher(o.allowList ?? []);
  const allowedRanges = o.allowedRanges ?? [];
  const maxRedirects = o.maxRedirects ?? 5;

  const refuse = (url: URL, label: string, range: string): never => {
    o.log?.warn(
      { host: printableHost(url.hostname) ?? '(IP literal)', range, code: 'blocked_address' },
      'outbound request refused: internal address',
    );
    throw new SafeFetchError(
      'blocked_address',
      label,
      `outbound request to ${label} refused: its address is not allowed (${range})`,
    );
  };

  /** The addresses to connect to, after the check when internal ranges are refused. */
  async function addressesOf(url: URL, label: string, signal: AbortSignal): Promise<ResolvedAddress[]> {
    const { host, literal } = bareHost(url.hostname);
    const guarded = o.disallowPrivate && !isException(url);
    if (guarded && isLocalhostName(host)) refuse(url, label, 'loopback');
    let addresses: ResolvedAddress[];
    if (literal) addresses = [{ address: host, family: isIPv6(host) ? 6 : 4 }];
    else {
      try {
        addresses = await raced(resolver(host), signal);
      } catch (e) {
        if (signal.aborted) throw e;
        throw new SafeFetchError('network', label, `${label} could not be resolved (${errnoCode(e)})`);
      }
    }
    if (!addresses.length) throw new SafeFetchError('network', label, `${label} has no address`);
    if (guarded) {
      for (const a of addresses) {
        const range = addressRange(a.address);
        if (range !== 'unicast' && !inRanges(a.address, allowedRanges)) refuse(url, label, range);
      }
    }
    return addresses;
  }

  const safeFetch = async (input: string | URL, init: SafeFetchInit = {}): Promise<SafeResponse> => {
    const timeoutMs = init.timeoutMs ?? o.timeoutMs ?? 10_000;
    const maxBytes = init.maxBytes ?? o.maxBytes ?? 1 << 20;
    let url = parseTarget(input);
    const started = Date.now();
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(new Error('timeout')), timeoutMs);
    const signal = init.signal ? AbortSignal.any([timer.signal, init.signal]) : timer.signal;
    let label = describeHost(url.hostname);
    let method = (init.method ?? 'GET').toUpperCase();
    let body = init.body;
    const headers: OutgoingHttpHeaders = { 'user-agent': o.userAgent ?? `gatehouse/${VERSION}` };
    for (const [k, v] of Object.entries(init.headers ?? {})) headers[k.toLowerCase()] = v;
    if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
    try {
      for (let redirects = 0; ; redirects++) {
        const addresses = await addressesOf(url, label, signal);
        const left = timeoutMs - (Date.now() - started);
        const connectTimeoutMs = Math.max(1, Math.min(o.connectTimeoutMs ?? 5_000, left));
        const res = await send({
          url,
          method,
          headers,
          body,
          addresses,
          label,
          connectTimeoutMs,
          signal,
          ca: o.ca,
          keepAlive: init.keepAlive,
        });
        const location = res.headers.location;
        if (REDIRECTS.has(res.statusCode ?? 0) && location && init.redirect !== 'manual') {
          res.destroy();
          if (redirects >= maxRedirects) {
            throw new SafeFetchError(
              'too_many_redirects',
              label,
              `outbound request to ${label} was redirected more than ${maxRedirects} times`,
            );
          }
          const next = parseTarget(location, url);
          if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
            method = method === 'HEAD' ? 'HEAD' : 'GET';
            body = undefined;
            delete headers['content-length'];
            delete headers['content-type'];
          }
          if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
          url = next;
          label = describeHost(url.hostname);
          continue;
        }
        const buf = await readBody(res, maxBytes, label);
        const finalLabel = label;
        return {
          status: res.statusCode ?? 0,
          headers: flattenHeaders(res),
          url: url.toString(),
          redirects,
          body: buf,
          text: () => buf.toString('utf8'),
          json: <T>() => {
            try {
              return JSON.parse(buf.toString('utf8')) as T;
            } catch {
              throw new SafeFetchError('invalid_response', finalLabel, `the response of ${finalLabel} is not JSON`);
            }
          },
        };
      }
    } catch (e) {
      const err =
        e instanceof SafeFetchError
          ? e
          : timer.signal.aborted
            ? new SafeFetchError('timeout', label, `${label} did not answer within ${timeoutMs} ms`)
            : new SafeFetchError('network', label, `outbound request to ${label} failed (${errnoCode(e)})`);
      if (err.code !== 'blocked_address') o.log?.debug({ host: err.host, code: err.code }, 'outbound request failed');
      throw err;
    } finally {
      clearTimeout(timeout);
    }
  };

  const check = async (input: string | URL): Promise<void> => {
    const url = parseTarget(input);
    const label = describeHost(url.hostname);
    const timeoutMs = o.timeoutMs ?? 10_000;
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(new Error('timeout')), timeoutMs);
    try {
      await addressesOf(url, label, timer.signal);
    } catch (e) {
      if (e instanceof SafeFetchError) throw e;
      throw new SafeFetchError('timeout', label, `${label} could not be resolved within ${timeoutMs} ms`);
    } finally {
      clearTimeout(timeout);
    }
  };
  // One client span per outbound request (method, scheme and host name: never an address or a path,
  // which may carry secrets).
  const traced = (input: string | URL, init?: SafeFetchInit): Promise<SafeResponse> => {
    let host = '';
    let scheme = '';
    try {
      const u = new URL(String(input));
      host = printableHost(u.hostname) ?? '';
      scheme = u.protocol.replace(':', '');
    } catch {}
    const method = (init?.method ?? 'GET').toUpperCase();
    return inSpan(
      `${method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'url.scheme': scheme,
          ...(host ? { 'server.address': host } : {}),
        },
      },
      async (span) => {
        const res = await safeFetch(input, init);
        span.setAttribute('http.response.status_code', res.status);
        return res;
      },
    );
  };
  return Object.assign(traced, { check });
}
