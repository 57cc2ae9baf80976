/**
 * Finds the stored record of a presented token for introspection and revocation: opaque tokens by
 * their verified HMAC signature, JWT access tokens by their JWS signature segment once the JWT
 * verifies against `hydra.jwt.access-token`. `token_type_hint` only changes the order tried.
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Config } from '../../core/config/load.ts';
import { verifyOpaqueToken } from '../../core/crypto/hmac.ts';
import type { Database } from '../../core/db/schema.ts';
import type { KeyPort } from '../ports.ts';
import { findAccessToken, findRefreshToken, type RefreshRecord, type TokenRecord } from '../store/tokens.ts';

export type FoundToken = { use: 'access_token'; row: TokenRecord } | { use: 'refresh_token'; row: RefreshRecord };

export interface LookupDeps {
  config: Config;
  clock: Clock;
  db: Kysely<Database>;
  keys: KeyPort;
}

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

  async function access(token: string): Promise<FoundToken | undefined> {
    const sig = await accessTokenSignature(d, token);
    const row = sig ? await findAccessToken(d.db, sig) : undefined;
    return row ? { use: 'access_token', row } : undefined;
  }

  async function refresh(token: string): Promise<FoundToken | undefined> {
    const sig = verifyOpaqueToken('ory_rt_', token, secrets);
    const row = sig ? await findRefreshToken(d.db, sig) : undefined;
    return row ? { use: 'refresh_token', row } : undefined;
  }

  return {
    /** The record of `token`, trying refresh tokens first only when `preferRefresh`. */
    async find(token: string, preferRefresh: boolean): Promise<FoundToken | undefined> {
      if (!token) return undefined;
      const order = preferRefresh ? [refresh, access] : [access, refresh];
      for (const f of order) {
        const hit = await f(token);
        if (hit) return hit;
      }
      return undefined;
    },
  };
}

export type TokenLookup = ReturnType<typeof createTokenLookup>;
