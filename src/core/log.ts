/**
 * Structured logging with pino. Every line passes one sanitiser just before it is written
 * (pino's `streamWrite` hook), so the rules hold for messages, child bindings, serialised errors and
 * nested objects alike:
 * - no entry carries `audience: "audit"` at any depth (other fields unchanged);
 * - values under secret-bearing keys (secrets, passwords, tokens, cookies, `Authorization`, API keys,
 *   DSNs, private JWK members) are `[redacted]` at any depth, and token-shaped text (Hydra opaque
 *   tokens, generated admin API keys `gha_…`, JWTs, `Bearer …`, URL passwords, token query
 *   parameters) is redacted inside strings;
 * - IP addresses never appear: address-bearing keys and every IPv4/IPv6 address inside a string
 *   become `[address]`.
 * `log.leak_sensitive_values` switches the secret redaction off (never in production); the audit
 * and address rules always apply.
 */
import { Writable } from 'node:stream';
import pino, { type DestinationStream, type Logger } from 'pino';
import { scrubAddresses } from './address-policy.ts';

export type { Logger };

const norm = (key: string) => key.toLowerCase().replace(/[^a-z0-9]/g, '');

const SECRET_KEYS = new Set([
  'secret',
  'secrets',
  'password',
  'passwd',
  'token',
  'tokens',
  'authorization',
  'proxyauthorization',
  'cookie',
  'cookies',
  'setcookie',
  'apikey',
  'apikeys',
  'xapikey',
  'apisecret',
  'dsn',
  'databaseurl',
  'connectionstring',
  'privatekey',
  'assertion',
  'clientassertion',
  'credentials',
  'sessiondata',
]);
/** `client_secret`, `webhookSecret`, `scim_secret`, `refresh_token`, `hashed_password` … */
const SECRET_SUFFIX = /(secret|password|token)s?$/;
const ADDRESS_KEYS = new Set([
  'ip',
  'ips',
  'address',
  'remoteaddress',
  'remoteaddr',
  'remoteip',
  'localaddress',
  'clientip',
  'xforwardedfor',
  'xrealip',
  'forwarded',
  'trueclientip',
  'cfconnectingip',
]);
/** Private members of a JWK (RFC 7518 §6.2.2, §6.3.2, §6.4). */
const JWK_PRIVATE = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

export const isSecretKey = (key: string): boolean => {
  const k = norm(key);
  return SECRET_KEYS.has(k) || SECRET_SUFFIX.test(k);
};

const TOKEN_TEXT: Array<[RegExp, string]> = [
  [/\bory_[a-z]{2}_[\w-]+(?:\.[\w-]+)?/g, '[redacted]'], // Hydra opaque tokens
  [/\beyJ[\w-]{4,}\.[\w-]*(?:\.[\w-]*){1,3}/g, '[redacted]'], // JWS / JWE compact
  [/\bgha_[\w-]{16,}/g, '[redacted]'], // admin API keys (`gatehouse admin-key hash --generate`)
  [/\b(Bearer|Basic|Api-Key|DPoP)\s+[\w.~+/=-]+/gi, '$1 [redacted]'],
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*:)[^\s@/]+@/gi, '$1[redacted]@'], // user:password@ in URLs and DSNs
  [
    /([?&#](?:access_token|refresh_token|id_token|code|client_secret|client_assertion|assertion|token|password|(?:login|consent|logout)_(?:challenge|verifier))=)[^&#\s"]*/gi,
    '$1[redacted]',
  ],
];

/** Cheap pre-check: only strings with one of these can hold token-shaped text. */
const MAYBE_TOKEN = /ory_|eyJ|gha_|bearer|basic|api-key|dpop|:\/\/|[?&#]\w+=/i;

function scrubText(s: string, secrets: boolean): string {
  let out = scrubAddresses(s);
  if (secrets && MAYBE_TOKEN.test(out)) for (const [re, by] of TOKEN_TEXT) out = out.replace(re, by);
  return out;
}

/**
 * Applies the log rules to one JSON value (a parsed log line): drops `audience: "audit"` pairs,
 * redacts secrets (when `secrets`) and addresses, at any depth.
 */
export function sanitizeLogValue(value: unknown, secrets = true, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value, secrets);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 32) return '[truncated]'; // nothing unchecked gets through
  if (Array.isArray(value)) return value.map((v) => sanitizeLogValue(v, secrets, depth + 1));
  const obj = value as Record<string, unknown>;
  const isJwk = typeof obj.kty === 'string';
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'audience' && v === 'audit') continue;
    if (depth === 0 && (k === 'time' || k === 'level')) {
      out[k] = v; // written by pino itself
      continue;
    }
    if (v !== null && v !== undefined && ADDRESS_KEYS.has(norm(k))) out[k] = '[address]';
    else if (secrets && v !== null && v !== undefined && (isSecretKey(k) || (isJwk && JWK_PRIVATE.has(k))))
      out[k] = '[redacted]';
    else out[k] = sanitizeLogValue(v, secrets, depth + 1);
  }
  return out;
}

/** Applies the log rules to one serialised line (what pino is about to write). */
export function sanitizeLogLine(line: string, secrets = true): string {
  const nl = line.endsWith('\n') ? '\n' : '';
  try {
    return JSON.stringify(sanitizeLogValue(JSON.parse(line), secrets)) + nl;
  } catch {
    return scrubText(line, secrets);
  }
}

/** Errors nested anywhere in a log object are serialised like the top-level `err` (pino only does that one). */
function serializeErrors(value: unknown, depth = 0): unknown {
  if (value instanceof Error) return pino.stdSerializers.err(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value))
    return value.some((v) => v instanceof Error || (v && typeof v === 'object'))
      ? value.map((v) => serializeErrors(v, depth + 1))
      : value;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === null || typeof v !== 'object' || (depth === 0 && k === 'err')) continue; // pino serialises `err`
    const nv = serializeErrors(v, depth + 1);
    if (nv !== v) {
      out ??= { ...(value as Record<string, unknown>) };
      out[k] = nv;
    }
  }
  return out ?? value;
}

const LEVELS: Record<string, string> = { panic: 'fatal' };

/** Minimal `text` format: `LEVEL time msg key=value …` on one line. */
function textStream(out: NodeJS.WritableStream): DestinationStream {
  const names: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
  return new Writable({
    write(chunk, _enc, cb) {
      try {
        const { level, time, msg, pid: _p, hostname: _h, ...rest } = JSON.parse(String(chunk));
        const kv = Object.entries(rest)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`)
          .join(' ');
        out.write(`${names[level] ?? level} ${new Date(time).toISOString()} ${msg ?? ''}${kv ? ` ${kv}` : ''}\n`);
      } catch {
        out.write(chunk);
      }
      cb();
    },
  }) as unknown as DestinationStream;
}

/** `json_pretty` (Hydra's name): each entry as indented JSON. */
function prettyJsonStream(out: NodeJS.WritableStream): DestinationStream {
  return new Writable({
    write(chunk, _enc, cb) {
      try {
        out.write(`${JSON.stringify(JSON.parse(String(chunk)), null, 2)}\n`);
      } catch {
        out.write(chunk);
      }
      cb();
    },
  }) as unknown as DestinationStream;
}

export interface LogOptions {
  level?: string;
  format?: string;
  leakSensitiveValues?: boolean;
  destination?: DestinationStream;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const level = LEVELS[opts.level ?? 'info'] ?? opts.level ?? 'info';
  const dest =
    opts.destination ??
    (opts.format === 'text'
      ? textStream(process.stdout)
      : opts.format === 'json_pretty'
        ? prettyJsonStream(process.stdout)
        : pino.destination({ sync: false }));
  const secrets = !opts.leakSensitiveValues;
  return pino(
    {
      level,
      base: { service: 'gatehouse' },
      formatters: { log: (obj) => serializeErrors(obj) as Record<string, unknown> },
      hooks: { streamWrite: (line) => sanitizeLogLine(line, secrets) },
      serializers: { err: pino.stdSerializers.err },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest,
  );
}

/** A silent logger for library use and tests that do not inspect logs. */
export const silentLogger = (): Logger => pino({ level: 'silent' });
