/**
 * The key provider other features sign and verify with (ID tokens, JWT access tokens, logout
 * tokens, signed userinfo), and the source of `/.well-known/jwks.json`.
 *
 * Reads are kept per process while the change feed is live (every write to `jwk_keys`, from any
 * process, notifies it); otherwise they go through the JWK cache when `db.jwk_cache.enabled`. A set that is missing (or, for
 * signing, has no private key) is generated once: inside one process concurrent callers share one
 * in-flight generation; across processes a row lock in `jwk_set_locks` makes every other process
 * wait for the first one's commit and then read its keys, so concurrent first requests all get the
 * same keys and never a conflict.
 */
import { randomUUID } from 'node:crypto';
import { importJWK } from 'jose';
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { ChangeFeed } from '../../core/db/changes.ts';
import { withTx } from '../../core/db/tx.ts';
import { AppError, HERODOT } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import { insertKeys, listKeys, lockSetForGeneration } from '../store/jwks.ts';
import type { Database } from '../tables.ts';
import type { TtlLru } from './cache.ts';
import { generateJwk } from './generate.ts';
import { canSign, type Jwk, type Jwks, signingAlgOf, toPublicJwk } from './keys.ts';
import type { KeySealer } from './sealed.ts';

/** Hydra's reserved sets. */
export const ID_TOKEN_SET = 'hydra.openid.id-token';
export const ACCESS_TOKEN_SET = 'hydra.jwt.access-token';

/** Algorithm of keys generated automatically (Hydra: RS256, 4096-bit, use sig, UUID kid). */
const AUTO_ALG = 'RS256';

export type SigningCryptoKey = Awaited<ReturnType<typeof importJWK>>;

export interface SigningKey {
  kid: string;
  alg: string;
  /** The private key, ready for jose (`new SignJWT(…).setProtectedHeader({ alg, kid }).sign(key)`). */
  key: SigningCryptoKey;
  /** The public part, as published. */
  publicJwk: Jwk;
}

export interface KeyProvider {
  /** The newest key of `set` that can sign; generates an RS256 key when the set has none. */
  getSigningKey(set: string): Promise<SigningKey>;
  /** Public keys of `set`, newest first (empty when the set does not exist). For jose's `createLocalJWKSet`. */
  getVerificationKeys(set: string): Promise<Jwks>;
  /** `/.well-known/jwks.json`: public keys of the broadcast sets plus the two reserved sets, generating missing sets. */
  getPublicJwks(): Promise<Jwks>;
  /** Drops this process's cache entry for a set after a local write. Other processes refresh by TTL. */
  forget(set: string): void;
}

export interface KeyProviderDeps {
  db: Kysely<Database>;
  sealer: KeySealer;
  clock: Clock;
  log: Logger;
  cache: TtlLru<Jwk[]> | undefined;
  /** Key changes of every process: while live, keys are kept until a change (TTL cache or not). */
  changes?: ChangeFeed | undefined;
  broadcastSets: readonly string[];
}

type Need = 'any' | 'signing';

const satisfies = (keys: Jwk[], need: Need) => (need === 'any' ? keys.length > 0 : keys.some(canSign));

export function createKeyProvider(d: KeyProviderDeps): KeyProvider {
  const flights = new Map<string, Promise<Jwk[]>>();
  const imported = new WeakMap<Jwk, Promise<SigningCryptoKey>>();
  /** The public view of each kept key, made once (the token endpoint asks for the signing key per token). */
  const publics = new WeakMap<Jwk, Jwk>();
  const publicOf = (jwk: Jwk): Jwk => {
    let p = publics.get(jwk);
    if (!p) {
      p = toPublicJwk(jwk) as Jwk;
      publics.set(jwk, p);
    }
    return p;
  };

  const known = new Map<string, { version: number; keys: Jwk[] }>();

  async function readSet(set: string): Promise<Jwk[]> {
    if (d.changes?.live()) {
      const version = d.changes.version('jwk');
      const k = known.get(set);
      if (k?.version === version) return k.keys;
      const keys = (await listKeys(d.db, set)).map((r) => d.sealer.open(r));
      if (keys.length) {
        known.set(set, { version, keys });
        d.cache?.set(set, keys, keys.length); // for when the feed goes down
      }
      return keys;
    }
    const hit = d.cache?.get(set);
    if (hit) return hit;
    const keys = (await listKeys(d.db, set)).map((r) => d.sealer.open(r));
    if (keys.length) d.cache?.set(set, keys, keys.length);
    return keys;
  }

  async function generateIfMissing(set: string, need: Need): Promise<Jwk[]> {
    const keys = await withTx(d.db, async (trx) => {
      await lockSetForGeneration(trx, set);
      const existing = (await listKeys(trx, set)).map((r) => d.sealer.open(r));
      if (satisfies(existing, need)) return existing;
      d.log.warn({ set }, 'JSON Web Key set has no usable key yet: generating one');
      const jwk = await generateJwk(AUTO_ALG, { kid: randomUUID(), use: 'sig' });
      await insertKeys(trx, [d.sealer.seal(set, { ...jwk, kid: jwk.kid ?? '' }, d.clock.now())]);
      return [jwk, ...existing];
    });
    d.cache?.set(set, keys, keys.length);
    return keys;
  }

  /** One generation per set and need at a time in this process; later callers join it. */
  function ensure(set: string, need: Need): Promise<Jwk[]> {
    const id = `${need}\0${set}`;
    let flight = flights.get(id);
    if (!flight) {
      flight = generateIfMissing(set, need).finally(() => flights.delete(id));
      flights.set(id, flight);
    }
    return flight;
  }

  async function importKey(jwk: Jwk, alg: string): Promise<SigningCryptoKey> {
    let p = imported.get(jwk);
    if (!p) {
      p = importJWK({ ...jwk, alg } as never, alg);
      imported.set(jwk, p);
    }
    try {
      return await p;
    } catch {
      imported.delete(jwk);
      throw new AppError({
        status: 500,
        code: HERODOT.internal,
        description: `The signing key ${jwk.kid} cannot be used with algorithm ${alg}.`,
      });
    }
  }

  return {
    async getSigningKey(set) {
      let keys = await readSet(set);
      if (!keys.some(canSign)) keys = await ensure(set, 'signing');
      const jwk = keys.find(canSign);
      const alg = jwk && signingAlgOf(jwk);
      if (!jwk || !alg)
        throw new AppError({ status: 500, code: HERODOT.internal, description: `No signing key in ${set}.` });
      return { kid: jwk.kid ?? '', alg, key: await importKey(jwk, alg), publicJwk: publicOf(jwk) };
    },

    async getVerificationKeys(set) {
      const keys = await readSet(set);
      return { keys: keys.map(toPublicJwk).filter((k): k is Jwk => k !== undefined) };
    },

    async getPublicJwks() {
      const sets = [...new Set([...d.broadcastSets, ACCESS_TOKEN_SET, ID_TOKEN_SET])];
      const perSet = await Promise.all(
        sets.map(async (set) => {
          const keys = await readSet(set);
          return keys.length ? keys : ensure(set, 'any');
        }),
      );
      return {
        keys: perSet
          .flat()
          .map(toPublicJwk)
          .filter((k): k is Jwk => k !== undefined),
      };
    },

    forget(set) {
      d.cache?.delete(set);
      d.changes?.bump('jwk');
    },
  };
}
