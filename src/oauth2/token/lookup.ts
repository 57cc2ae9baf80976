/**
 * Finds the stored record of a presented token for introspection and revocation: opaque tokens by
 * their verified HMAC signature, JWT access tokens by their JWS signature segment once the JWT
 * verifies against `hydra.jwt.access-token`. `token_type_hint` only changes the order tried.
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { Kysely } from 'kysely';
import { Recent } from '../../core/bounded.ts';
import type { Clock } from '../../core/clock.ts';
import { verifyOpaqueToken } from '../../core/crypto/hmac.ts';
import type { ChangeFeed } from '../../core/db/changes.ts';
import type { OAuth2Config } from '../deps.ts';
import type { KeyPort } from '../ports.ts';
import { findAccessToken, findRefreshToken, type RefreshRecord, type TokenRecord } from '../store/tokens.ts';
import type { Database } from '../tables.ts';

export type FoundToken = { use: 'access_token'; row: TokenRecord } | { use: 'refresh_token'; row: RefreshRecord };

export interface LookupDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  keys: KeyPort;
  /** Change notifications: with them, access-token rows found by `find(…, { cached })` are kept briefly. */
  changes?: ChangeFeed | undefined;
}

/** How long an access-token row found for introspection may be answered from memory at most. */
export const INTROSPECTION_CACHE_TTL_MS = 5_000;
/** Access-token rows kept per process (the oldest go first). */
const INTROSPECTION_CACHE_SIZE = 10_000;

/** The stored signature of an access token (opaque HMAC or JWS segment), once it verifies; else undefined. */
export async function accessTokenSignature(
  d: Pick<LookupDeps, 'config' | 'clock' | 'keys'>,
  token: string,
): Promise<string | undefined> {
  if (token.startsWith('ory_at_')) return verifyOpaqueToken('ory_at_', token, d.config.secrets.system);
  if (token.split('.').length !== 3) return undefined;
  try {
    const jwks = createLocalJWKSet({ keys: await d.keys.publicKeys('hydra.jwt.access-token') });
    await jwtVerify(token, jwks, { currentDate: d.clock.now() });
    return token.split('.')[2];
  } catch {
    return undefined;
  }
}

export function createTokenLookup(d: LookupDeps) {
  const secrets = d.config.secrets.system;

  /**
   * Access-token rows recently found, by signature, for introspection: only rows that exist (an
   * unknown token is looked up every time), only while the change feed is live, and each for at
   * most INTROSPECTION_CACHE_TTL_MS. Deleting access tokens — in this process (counted before the
   * statement runs) or in any other (the `token` notification of a trigger, sql/0220) — drops them
   * all. Expiry and scope are checked on every use, as for a row just read. Rows older than that
   * are dropped as others are kept: they are of no use, and without traffic of new tokens they were
   * held until 10,000 newer ones pushed them out.
   */
  const known = new Recent<string, { version: number; row: TokenRecord }>({
    max: INTROSPECTION_CACHE_SIZE,
    ttlMs: INTROSPECTION_CACHE_TTL_MS,
  });
  const versionNow = (feed: ChangeFeed) => feed.version('token');

  async function findAccessCached(sig: string): Promise<TokenRecord | undefined> {
    const feed = d.changes;
    if (!feed?.live()) return findAccessToken(d.db, sig);
    const version = versionNow(feed);
    const readAt = Date.now();
    const k = known.get(sig);
    if (k && k.version === version) return k.row;
    const row = await findAccessToken(d.db, sig);
    known.delete(sig);
    // Kept only when nothing was deleted while the row was read (else it may be gone already), for
    // INTROSPECTION_CACHE_TTL_MS from the read's start.
    if (row && versionNow(feed) === version) known.set(sig, { version, row }, readAt);
    return row;
  }

  async function access(token: string, cached = false): Promise<FoundToken | undefined> {
    const sig = await accessTokenSignature(d, token);
    const row = sig ? await (cached ? findAccessCached(sig) : findAccessToken(d.db, sig)) : undefined;
    return row ? { use: 'access_token', row } : undefined;
  }

  async function refresh(token: string): Promise<FoundToken | undefined> {
    const sig = verifyOpaqueToken('ory_rt_', token, secrets);
    const row = sig ? await findRefreshToken(d.db, sig) : undefined;
    return row ? { use: 'refresh_token', row } : undefined;
  }

  return {
    /**
     * The record of `token`, trying refresh tokens first only when `preferRefresh`. `cached`
     * (introspection): an access token may come from the short-lived cache above; refresh tokens
     * are always read (their use changes whether they are active).
     */
    async find(token: string, preferRefresh: boolean, o: { cached?: boolean } = {}): Promise<FoundToken | undefined> {
      if (!token) return undefined;
      const acc = (t: string) => access(t, o.cached);
      const order = preferRefresh ? [refresh, acc] : [acc, refresh];
      for (const f of order) {
        const hit = await f(token);
        if (hit) return hit;
      }
      return undefined;
    },
  };
}

export type TokenLookup = ReturnType<typeof createTokenLookup>;
