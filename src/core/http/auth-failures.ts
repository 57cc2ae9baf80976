/**
 * Rate limiting of guessable secrets: failed OAuth 2.0 client authentications (`/oauth2/token`,
 * `/oauth2/revoke`) and failed SCIM bearer checks (`/api/scim/v2.0/{directoryId}/…`), counted per
 * credential (client id, directory id) and per source address in fixed windows in PostgreSQL, so
 * that the limit holds across processes. A request whose credential or address is over its limit
 * is refused with 429 and `Retry-After` (RFC 6585 §4) before any secret is checked.
 *
 * Cost: a request reads at most two rows by primary key; only a failure writes (one upsert).
 * Keys are SHA-256 digests, so no client id or address is stored in the clear.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Context, Middleware, Next } from 'koa';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/tx.ts';
import { AppError, type ErrorFamily } from '../errors.ts';

export interface FailedAuthLimits {
  enabled: boolean;
  /** Window length in ms. */
  window: number;
  perCredential: number;
  perAddress: number;
}

interface Key {
  kind: 'credential' | 'address';
  digest: string;
}

const digest = (kind: string, value: string) =>
  createHash('sha256').update(`${kind}\0${value}`).digest('base64url').slice(0, 32);

export const TOO_MANY_TEXT = 'Too many failed authentication attempts, try again later.';

function tooMany(family: ErrorFamily, retryAfter: number): AppError {
  const headers = { 'Retry-After': String(retryAfter) };
  if (family === 'scim')
    return new AppError({ status: 429, code: 'scim', description: TOO_MANY_TEXT, family, headers });
  return new AppError({ status: 429, code: 'too_many_requests', description: TOO_MANY_TEXT, family, headers });
}

/** The counters in PostgreSQL. */
export function createFailureCounter(db: Db, clock: Clock, limits: FailedAuthLimits) {
  const windowOf = (now: Date) => new Date(Math.floor(now.getTime() / limits.window) * limits.window);
  const limitOf = (k: Key) => (k.kind === 'credential' ? limits.perCredential : limits.perAddress);
  return {
    /** Seconds until the window ends when any key is at its limit; undefined otherwise. */
    async blocked(keys: Key[]): Promise<number | undefined> {
      const active = keys.filter((k) => limitOf(k) > 0);
      if (!active.length) return undefined;
      const now = clock.now();
      const start = windowOf(now);
      const rows = await db
        .selectFrom('auth_failures')
        .select(['key', 'failures'])
        .where('window_start', '=', start)
        .where(
          'key',
          'in',
          active.map((k) => k.digest),
        )
        .execute();
      const over = active.some((k) => (rows.find((r) => r.key === k.digest)?.failures ?? 0) >= limitOf(k));
      if (!over) return undefined;
      return Math.max(1, Math.ceil((start.getTime() + limits.window - now.getTime()) / 1000));
    },
    /** Counts one failure for every key (one statement); now and then drops windows that ended. */
    async fail(keys: Key[]): Promise<void> {
      const active = keys.filter((k) => limitOf(k) > 0);
      if (!active.length) return;
      const start = windowOf(clock.now());
      await db
        .insertInto('auth_failures')
        .values(active.map((k) => ({ key: k.digest, window_start: start, failures: 1 })))
        .onConflict((oc) =>
          oc.columns(['key', 'window_start']).doUpdateSet({ failures: sql`auth_failures.failures + 1` }),
        )
        .execute();
      if (Math.random() < 0.05) await db.deleteFrom('auth_failures').where('window_start', '<', start).execute();
    },
  };
}

export type FailureCounter = ReturnType<typeof createFailureCounter>;

function decode(v: string): string {
  try {
    return decodeURIComponent(v.replaceAll('+', ' '));
  } catch {
    return v;
  }
}

/** The client id a token or revocation request claims: HTTP Basic, `client_id`, or an assertion's `sub`. */
export function claimedClientId(ctx: Context): string | undefined {
  const auth = ctx.get('authorization');
  const m = /^basic\s+(\S+)/i.exec(auth);
  if (m) {
    const raw = Buffer.from(m[1] as string, 'base64').toString('utf8');
    const i = raw.indexOf(':');
    return decode(i < 0 ? raw : raw.slice(0, i));
  }
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);
  const id = first(body.client_id);
  if (typeof id === 'string' && id) return id;
  const assertion = first(body.client_assertion);
  if (typeof assertion === 'string') {
    try {
      const payload = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8')) as unknown;
      const sub = (payload as { sub?: unknown })?.sub;
      if (typeof sub === 'string' && sub) return sub;
    } catch {
      // not a JWT: counted per address only
    }
  }
  return undefined;
}

const SCIM_PATH = /^\/api\/scim\/v2\.0\/([^/]+)\//;

/** What a request authenticates, if it is one of the limited kinds. */
function target(ctx: Context): { family: ErrorFamily; credential: string | undefined } | undefined {
  if (ctx.method === 'POST' && (ctx.path === '/oauth2/token' || ctx.path === '/oauth2/revoke'))
    return { family: 'oauth2', credential: claimedClientId(ctx) };
  const m = SCIM_PATH.exec(ctx.path);
  if (m) return { family: 'scim', credential: `scim:${decode(m[1] as string).toLowerCase()}` };
  return undefined;
}

/** Koa middleware of the public listener (after body parsing, before the routers). */
export function failedAuthLimiter(counter: FailureCounter, limits: FailedAuthLimits): Middleware {
  return async (ctx: Context, next: Next) => {
    const t = limits.enabled ? target(ctx) : undefined;
    if (!t) return next();
    const keys: Key[] = [{ kind: 'address', digest: digest('address', ctx.ip) }];
    if (t.credential !== undefined) keys.push({ kind: 'credential', digest: digest('credential', t.credential) });
    const wait = await counter.blocked(keys);
    if (wait !== undefined) {
      ctx.state.log?.warn({ kind: t.family }, 'failed authentications over the limit: refused');
      throw tooMany(t.family, wait);
    }
    let failed = false;
    try {
      await next();
      failed = ctx.status === 401;
    } catch (e) {
      failed = e instanceof AppError && e.status === 401;
      throw e;
    } finally {
      if (failed) await counter.fail(keys);
    }
  };
}
