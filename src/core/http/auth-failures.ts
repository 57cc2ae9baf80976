/**
 * Rate limiting of guessable secrets: failed authentications of the requests the domains name
 * (`FailedAuthTarget`: OAuth 2.0 client authentication at the token and revocation endpoints, SCIM
 * bearer checks), counted per credential (client id, directory id) and per source address in fixed
 * windows in PostgreSQL, so that the limit holds across processes. A request whose credential or address is over its limit
 * is refused with 429 and `Retry-After` (RFC 6585 §4) before any secret is checked.
 *
 * Cost: only a failure writes (one upsert). The counts a process read are kept in memory for the
 * current window while it listens for changes (db/changes.ts): every write to `auth_failures`, by
 * any process, notifies `auth_failure` (a trigger, sql/0221) and makes the next check read again,
 * as does a failure counted here. So while nobody fails, a check reads nothing; otherwise it reads
 * at most two rows by primary key. A failure counted in another process is seen once its
 * notification arrives (at its commit, in practice within milliseconds) — the same order of slack
 * as between concurrent attempts, which are all checked before any of them is counted.
 * Keys are SHA-256 digests, so no client id or address is stored in the clear.
 */
import { createHash } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { sql } from 'kysely';
import { keepNewest } from '../bounded.ts';
import type { Clock } from '../clock.ts';
import type { ChangeFeed } from '../db/changes.ts';
import type { Db } from '../db/tx.ts';
import { AppError } from '../errors.ts';
import { plainError } from './errors.ts';

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

/** 429 in the request's family's shape (its path prefix), else `too_many_requests`. */
function tooMany(ctx: Context, retryAfter: number): AppError {
  const headers = { 'Retry-After': String(retryAfter) };
  const fallback = () => new AppError({ status: 429, code: 'too_many_requests', description: TOO_MANY_TEXT, headers });
  return plainError(ctx, 429, TOO_MANY_TEXT, fallback, headers);
}

/** Counts kept in memory per process (see above); the oldest go first. */
const KNOWN_COUNTS = 10_000;

/** The counters in PostgreSQL (kept in memory between changes when `changes` is given). */
export function createFailureCounter(db: Db, clock: Clock, limits: FailedAuthLimits, changes?: ChangeFeed) {
  const windowOf = (now: Date) => new Date(Math.floor(now.getTime() / limits.window) * limits.window);
  const limitOf = (k: Key) => (k.kind === 'credential' ? limits.perCredential : limits.perAddress);
  /** Key digest → its count in window `start`, as read at change-feed version `version`. */
  const known = new Map<string, { start: number; version: number; failures: number }>();

  async function counts(active: Key[], start: Date): Promise<Map<string, number>> {
    const feed = changes?.live() ? changes : undefined;
    const version = feed?.version('auth_failure');
    const out = new Map<string, number>();
    if (feed) {
      for (const k of active) {
        const e = known.get(k.digest);
        if (e?.start === start.getTime() && e.version === version) out.set(k.digest, e.failures);
      }
      if (out.size === active.length) return out;
      out.clear();
    }
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
    for (const k of active) {
      const failures = rows.find((r) => r.key === k.digest)?.failures ?? 0;
      out.set(k.digest, failures);
      if (feed && version !== undefined) {
        keepNewest(known, k.digest, { start: start.getTime(), version, failures }, KNOWN_COUNTS);
      }
    }
    return out;
  }

  return {
    /** Seconds until the window ends when any key is at its limit; undefined otherwise. */
    async blocked(keys: Key[]): Promise<number | undefined> {
      const active = keys.filter((k) => limitOf(k) > 0);
      if (!active.length) return undefined;
      const now = clock.now();
      const start = windowOf(now);
      const seen = await counts(active, start);
      const over = active.some((k) => (seen.get(k.digest) ?? 0) >= limitOf(k));
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
      // Counts read here before are stale now (other processes learn it from the notification).
      changes?.bump('auth_failure');
      if (Math.random() < 0.05) await db.deleteFrom('auth_failures').where('window_start', '<', start).execute();
    },
  };
}

export type FailureCounter = ReturnType<typeof createFailureCounter>;

/**
 * A per-address limit on failures judged in a later request than the one the address was seen on,
 * so that no route-level limiter can count them: wrong device user codes (RFC 8628 §5.1) are
 * checked at the admin API, called by the verification UI, but counted against the address of the
 * browser that started the verification at the public listener. Counts of their own (keys in a
 * namespace of their own, limit `perAddress`), in the same table and windows as the rest.
 */
export function createAddressFailureLimit(
  db: Db,
  clock: Clock,
  limits: Pick<FailedAuthLimits, 'enabled' | 'window' | 'perAddress'>,
  namespace: string,
  changes?: ChangeFeed,
) {
  const on = limits.enabled && limits.perAddress > 0;
  const counter = createFailureCounter(db, clock, { ...limits, perCredential: 0 }, changes);
  const keys = (address: string): Key[] => [{ kind: 'address', digest: digest(`address:${namespace}`, address) }];
  return {
    /** Seconds until the window ends when `address` is at its limit; undefined otherwise (or when off). */
    blocked: async (address: string): Promise<number | undefined> => (on ? counter.blocked(keys(address)) : undefined),
    /** Counts one failure against `address`. */
    async fail(address: string): Promise<void> {
      if (on) await counter.fail(keys(address));
    },
  };
}

export type AddressFailureLimit = ReturnType<typeof createAddressFailureLimit>;

/**
 * What a request authenticates, as one domain sees it: the kind (logged) and the credential it
 * claims (undefined: counted per address only); undefined when the domain does not limit it.
 */
export type FailedAuthTarget = (ctx: Context) => { kind: string; credential: string | undefined } | undefined;

/**
 * The limiter of one route (the route policy layer runs it before the route's guard and handler for
 * routes that declare `failedAuth`): the route's target names the credential the request claims.
 */
export function failedAuthLimiter(
  counter: FailureCounter,
  limits: FailedAuthLimits,
): (target: FailedAuthTarget) => Middleware {
  return (target) => async (ctx: Context, next: Next) => {
    const t = limits.enabled ? target(ctx) : undefined;
    if (!t) return next();
    const keys: Key[] = [{ kind: 'address', digest: digest('address', ctx.ip) }];
    if (t.credential !== undefined) keys.push({ kind: 'credential', digest: digest('credential', t.credential) });
    const wait = await counter.blocked(keys);
    if (wait !== undefined) {
      ctx.state.log?.warn({ kind: t.kind }, 'failed authentications over the limit: refused');
      throw tooMany(ctx, wait);
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
