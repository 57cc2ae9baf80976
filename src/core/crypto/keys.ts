/**
 * Keys derived from `secrets.system` with HKDF-SHA256, one per purpose. The first secret is the
 * current one (it signs and encrypts); the others are still accepted (rotation). Each derived key
 * carries a short id so that a ciphertext names the key that made it.
 */
import { createHash, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';

/** The purposes of the keys the core hands out by name (the HKDF label is `gatehouse:<purpose>`). */
export type CorePurpose =
  | 'flow' // login/consent/logout challenges and verifiers (JWE)
  | 'cookie' // session and CSRF cookies (JWE)
  | 'jwk' // private JSON Web Keys at rest
  | 'session' // session data at rest (claims)
  | 'pagination' // page tokens
  | 'state' // signed OAuth state parameters (cloud directory authorization)
  | 'client-secret' // keyed hashes of generated OAuth 2.0 client secrets
  | 'console' // the operator console's session and sign-in cookies (JWE) and its client secret
  | 'setup_page'; // the CSRF tokens of a setup link's page

const CORE_PURPOSES: readonly CorePurpose[] = [
  'flow',
  'cookie',
  'jwk',
  'session',
  'pagination',
  'state',
  'client-secret',
  'console',
  'setup_page',
];

declare const domainPurpose: unique symbol;
/** A purpose a domain declares for its own keys (`domainKeyPurpose`), beside the core's. */
export type DomainPurpose = string & { readonly [domainPurpose]: true };

export type KeyPurpose = CorePurpose | DomainPurpose;

/**
 * Declares a domain's key purpose. Its label must differ from every purpose the core hands out,
 * or two uses would share one key; the domains' purposes are checked against each other where the
 * composition root gathers them (`distinctPurposes`).
 */
export function domainKeyPurpose(label: string): DomainPurpose {
  if (!/^[a-z][a-z0-9_-]*$/.test(label)) throw new Error(`key purpose '${label}': lower-case letters, digits, _ and -`);
  if ((CORE_PURPOSES as readonly string[]).includes(label))
    throw new Error(`key purpose '${label}' is one of the core's: its key would serve two uses`);
  return label as DomainPurpose;
}

/** Throws when two of the domains' key purposes have one label. */
export function distinctPurposes(purposes: readonly DomainPurpose[]): void {
  const seen = new Set<string>();
  for (const p of purposes) {
    if (seen.has(p)) throw new Error(`key purpose '${p}' is declared twice: its key would serve two uses`);
    seen.add(p);
  }
}

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
