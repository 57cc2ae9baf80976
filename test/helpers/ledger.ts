/**
 * The suite's secret ledger. Every test server started without a logger of the test's own logs at
 * `info` to a file of the run (one per server), and every credential its listeners hand out (tokens,
 * client and SCIM secrets, setup-link tokens, challenges and verifiers in redirects, session
 * cookies) is written to the run's ledger. At the end of the run, test/setup/global.ts scans every
 * log line for every ledger entry (test/setup/log-scan.ts): a credential in a log fails the run.
 */
import { appendFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import pino from 'pino';
import { inject } from 'vitest';
import { createLogger, type Logger } from '../../src/core/log.ts';

/** The run's folder for logs and ledgers (provided by the global setup); undefined outside a vitest run. */
function runDir(): string | undefined {
  try {
    return inject('suiteLogDir') || undefined;
  } catch {
    return undefined;
  }
}

let servers = 0;

/** A logger writing JSON lines at `info` to a log file of the run; undefined outside a vitest run. */
export function suiteLogger(): Logger | undefined {
  const dir = runDir();
  if (!dir) return undefined;
  const file = join(dir, `log-${process.pid}-${++servers}.jsonl`);
  return createLogger({ level: 'info', destination: pino.destination({ dest: file, sync: true }) as never });
}

/** JSON keys whose string values are credentials. */
const SECRET_KEYS = new Set([
  'access_token',
  'refresh_token',
  'id_token',
  'device_code',
  'client_secret',
  'registration_access_token',
  'secret',
  'webhook_secret',
  'token',
  'setupToken',
]);

/** Query and fragment parameters of redirects that carry credentials or one-time capabilities. */
const SECRET_PARAMS = new Set([
  'code',
  'access_token',
  'id_token',
  'login_challenge',
  'consent_challenge',
  'logout_challenge',
  'device_challenge',
  'login_verifier',
  'consent_verifier',
  'logout_verifier',
  'device_verifier',
  'token',
]);

/** Values this short are not secrets of ours (user codes, flags): never recorded. */
const MIN_LENGTH = 16;

function fromJson(v: unknown, out: Set<string>, key?: string): void {
  if (Array.isArray(v)) for (const x of v) fromJson(x, out, key);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) fromJson(x, out, k);
  else if (typeof v === 'string' && v.length >= MIN_LENGTH && key && SECRET_KEYS.has(key)) out.add(v);
  else if (typeof v === 'string' && key === 'url') {
    // A setup link's URL carries its token (`…/setup/<token>`).
    const token = /\/setup\/([^/?#]+)/.exec(v)?.[1];
    if (token && token.length >= MIN_LENGTH) out.add(token);
  }
}

function fromUrl(location: string, out: Set<string>): void {
  let u: URL;
  try {
    u = new URL(location, 'http://x/');
  } catch {
    return;
  }
  const params = [...u.searchParams, ...new URLSearchParams(u.hash.slice(1))];
  for (const [k, v] of params) if (SECRET_PARAMS.has(k) && v.length >= MIN_LENGTH) out.add(v);
}

function fromCookies(cookies: string[], out: Set<string>): void {
  for (const c of cookies) {
    const v = (c.split(';')[0] ?? '').split('=').slice(1).join('=');
    if (v.length >= MIN_LENGTH) out.add(v);
  }
}

const MAX_BODY = 512 * 1024;

/** Records the credentials the server's answers carry in the run's ledger. */
export function recordCredentials(server: Server): void {
  const dir = runDir();
  if (!dir) return;
  const ledger = join(dir, `secrets-${process.pid}.txt`);
  server.prependListener('request', (_req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown) => {
      if (size > MAX_BODY || chunk === undefined || chunk === null || typeof chunk === 'function') return;
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      size += b.length;
      chunks.push(b);
    };
    const write = res.write;
    const end = res.end;
    res.write = function (this: typeof res, chunk: unknown, ...rest: unknown[]) {
      keep(chunk);
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof res.write;
    res.end = function (this: typeof res, chunk?: unknown, ...rest: unknown[]) {
      keep(chunk);
      return (end as (...a: unknown[]) => typeof res).call(this, chunk, ...rest);
    } as typeof res.end;
    res.once('finish', () => {
      const found = new Set<string>();
      const location = res.getHeader('location');
      if (typeof location === 'string') fromUrl(location, found);
      const cookies = res.getHeader('set-cookie');
      if (Array.isArray(cookies)) fromCookies(cookies, found);
      const type = String(res.getHeader('content-type') ?? '');
      if (/json/.test(type) && size <= MAX_BODY) {
        try {
          fromJson(JSON.parse(Buffer.concat(chunks).toString('utf8')), found);
        } catch {
          // not JSON after all
        }
      }
      if (found.size) appendFileSync(ledger, `${[...found].join('\n')}\n`);
    });
  });
}
