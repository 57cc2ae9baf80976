/**
 * Client secrets at rest and their verification (see docs/security.md, "Client secrets").
 *
 * - A secret gatehouse generates (26 characters from a 66-character alphabet: about 157 bits) is
 *   stored as a keyed hash, HMAC-SHA256 under a key derived from `secrets.system`:
 *   `$hmac-sha256$k=<key id>$<mac>`. Guessing it is hopeless, so a slow hash adds nothing but
 *   cost; the key keeps a stolen table useless without the configuration.
 * - A secret someone chose keeps the slow hash of `oauth2.hashers` (PBKDF2 or bcrypt). Recent
 *   successful verifications are remembered in a bounded in-memory cache, keyed by an HMAC (under a
 *   per-process random key) of client id, stored hash and presented secret: a rotated secret changes
 *   the stored hash and so never matches an old entry, and only successes are ever added.
 * - Older hashes keep verifying. On a successful check a slow hash of a secret shaped like a
 *   generated one is replaced by the keyed hash, a slow hash whose cost differs from the configured
 *   one is re-hashed at the configured cost, and a keyed hash made with a rotated-out system secret
 *   is re-made with the current one.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type HasherConfig, hashSecret, verifySecret } from '../../core/crypto/hash.ts';
import { type KeyRing, keyRing, secretKey } from '../../core/crypto/keys.ts';
import { randomString } from '../../core/crypto/random.ts';

/** Hydra generates 26-character secrets (x.GenerateSecret); gatehouse keeps the length. */
export const SECRET_LENGTH = 26;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~';
const GENERATED_SHAPE = /^[A-Za-z0-9\-_.~]{26}$/;

export const generateSecret = (): string => randomString(SECRET_LENGTH, ALPHABET);

const KEYED = /^\$hmac-sha256\$k=([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

export interface SecretCheck {
  ok: boolean;
  /** A better hash to store instead of the presented one (only when ok). */
  rehash?: string;
}

export interface SecretHasherOptions {
  hashers: HasherConfig;
  /** `secrets.system` (read when first needed: a memory DSN may run without one). */
  systemSecrets: () => readonly string[];
  /** Successful slow-hash verifications remembered (0 turns the cache off). */
  cacheSize?: number;
  /** How long one is remembered, in ms. */
  cacheTtlMs?: number;
  now?: () => number;
}

export function createSecretHasher(o: SecretHasherOptions) {
  const cacheSize = o.cacheSize ?? 10_000;
  const ttl = o.cacheTtlMs ?? 10 * 60_000;
  const now = o.now ?? Date.now;
  let ring: KeyRing | undefined;
  const keys = () => {
    ring ??= keyRing(o.systemSecrets(), 'client-secret');
    return ring;
  };
  const cacheKey = randomBytes(32);
  /** cache entry → expiry; insertion order is age order (refreshed on hit). */
  const verified = new Map<string, number>();
  let decoy: Promise<string> | undefined;

  const mac = (key: Buffer, secret: string) => createHmac('sha256', secretKey(key)).update(secret, 'utf8').digest();

  function keyed(secret: string): string {
    const k = keys().current;
    return `$hmac-sha256$k=${k.id}$${mac(k.key, secret).toString('base64url')}`;
  }

  function checkKeyed(secret: string, m: RegExpExecArray): SecretCheck {
    const key = keys().byId(m[1] as string);
    const expected = Buffer.from(m[2] as string, 'base64url');
    // Unknown key id: compute against the current key anyway, so the cost does not depend on it.
    const got = mac((key ?? keys().current).key, secret);
    const ok = key !== undefined && got.length === expected.length && timingSafeEqual(got, expected);
    if (!ok) return { ok };
    return key.id === keys().current.id ? { ok } : { ok, rehash: keyed(secret) };
  }

  const entry = (id: string, hash: string, secret: string) =>
    createHmac('sha256', secretKey(cacheKey)).update(`${id}\0${hash}\0${secret}`, 'utf8').digest('base64url');

  function remember(e: string) {
    if (!cacheSize) return;
    verified.delete(e);
    verified.set(e, now() + ttl);
    while (verified.size > cacheSize) verified.delete(verified.keys().next().value as string);
  }

  function recalled(e: string): boolean {
    const exp = verified.get(e);
    if (exp === undefined) return false;
    if (exp <= now()) {
      verified.delete(e);
      return false;
    }
    return true;
  }

  /** Whether a slow hash was made with other settings than the configured ones. */
  function outdated(hash: string): boolean {
    const h = o.hashers;
    if (hash.startsWith('$2'))
      return h.algorithm !== 'bcrypt' || !hash.startsWith(`$2b$${String(h.bcrypt.cost).padStart(2, '0')}$`);
    return h.algorithm === 'bcrypt' || !hash.startsWith(`$pbkdf2-sha256$i=${h.pbkdf2.iterations},`);
  }

  return {
    /** The stored form of a secret gatehouse generated. */
    hashGenerated: (secret: string): string => keyed(secret),
    /** The stored form of a secret someone chose: the configured slow hash. */
    hashChosen: (secret: string): Promise<string> => hashSecret(secret, o.hashers),

    /** Checks `secret` against the stored `hash` of client `id`, in constant time for a given hash kind. */
    async verify(id: string, secret: string, hash: string): Promise<SecretCheck> {
      const m = KEYED.exec(hash);
      if (m) return checkKeyed(secret, m);
      const e = entry(id, hash, secret);
      if (recalled(e)) return { ok: true };
      const ok = await verifySecret(secret, hash);
      if (!ok) return { ok };
      if (GENERATED_SHAPE.test(secret)) return { ok, rehash: keyed(secret) };
      if (outdated(hash)) return { ok, rehash: await hashSecret(secret, o.hashers) };
      remember(e);
      return { ok };
    },

    /** Successful slow-hash checks remembered now (for tests and metrics). */
    cached: (): number => verified.size,

    /**
     * The work of a failed check when there is no hash to check against (unknown client, or one
     * without a secret): a keyed hash, as for a wrong secret of a generated-secret client.
     */
    async decoy(secret: string): Promise<void> {
      decoy ??= Promise.resolve(keyed(generateSecret()));
      checkKeyed(secret, KEYED.exec(await decoy) as RegExpExecArray);
    },
  };
}
