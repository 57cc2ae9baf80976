/**
 * Keys derived from `secrets.system` with HKDF-SHA256, one per purpose. The first secret is the
 * current one (it signs and encrypts); the others are still accepted (rotation). Each derived key
 * carries a short id so that a ciphertext names the key that made it.
 */
import { createHash, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';

export type KeyPurpose =
  | 'flow' // login/consent/logout challenges and verifiers (JWE)
  | 'cookie' // session and CSRF cookies (JWE)
  | 'jwk' // private JSON Web Keys at rest
  | 'session' // session data at rest (claims)
  | 'pagination' // page tokens
  | 'dsync' // directory-sync secrets at rest (cloud tokens, webhook secrets)
  | 'state' // signed OAuth state parameters (cloud directory authorization)
  | 'dsync_link' // signed authorization links (starting a cloud directory authorization)
  | 'client-secret' // keyed hashes of generated OAuth 2.0 client secrets
  | 'console' // the operator console's session and sign-in cookies (JWE) and its client secret
  | 'setup_page'; // the CSRF tokens of a setup link's page

export interface DerivedKey {
  id: string;
  key: Buffer;
}

export interface KeyRing {
  /** The key new material is protected with. */
  current: DerivedKey;
  /** Every accepted key, current first. */
  all: DerivedKey[];
  byId(id: string): DerivedKey | undefined;
}

const SALT = Buffer.from('gatehouse/v1');

export function deriveKey(secret: string, purpose: KeyPurpose, length = 32): DerivedKey {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(secret, 'utf8'), SALT, Buffer.from(`gatehouse:${purpose}`), length),
  );
  const id = createHash('sha256').update(key).digest('base64url').slice(0, 8);
  return { id, key };
}

export function keyRing(secrets: readonly string[], purpose: KeyPurpose): KeyRing {
  if (!secrets.length) throw new Error('no secrets configured');
  const all = secrets.map((s) => deriveKey(s, purpose));
  const map = new Map(all.map((k) => [k.id, k]));
  return { current: all[0] as DerivedKey, all, byId: (id) => map.get(id) };
}

const keyObjects = new WeakMap<Buffer, KeyObject>();
/**
 * The KeyObject of a secret key held as a Buffer, made once per Buffer. Node's HMAC and cipher
 * constructors prepare a Buffer key anew on every call, which costs several times the MAC of a
 * short message itself (about 80 µs against 7 µs on Node 24); a KeyObject is used as it is.
 */
export function secretKey(key: Buffer): KeyObject {
  let k = keyObjects.get(key);
  if (!k) {
    k = createSecretKey(key);
    keyObjects.set(key, k);
  }
  return k;
}
