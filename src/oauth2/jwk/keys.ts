/**
 * Pure JSON Web Key helpers: the member set and order Hydra emits (go-jose's), the public part of a
 * key, private-material detection and validation of key material supplied by admins.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';

/** A JWK as gatehouse stores and returns it (RFC 7517 members; unknown members are dropped, as go-jose does). */
export interface Jwk {
  use?: string;
  kty: string;
  kid?: string;
  crv?: string;
  alg?: string;
  k?: string;
  x?: string;
  y?: string;
  n?: string;
  e?: string;
  d?: string;
  p?: string;
  q?: string;
  dp?: string;
  dq?: string;
  qi?: string;
  x5c?: string[];
  x5u?: string;
  x5t?: string;
  'x5t#S256'?: string;
}

export interface Jwks {
  keys: Jwk[];
}

/** go-jose's member order, so our JSON reads like Hydra's. */
const MEMBERS = [
  'use',
  'kty',
  'kid',
  'crv',
  'alg',
  'k',
  'x',
  'y',
  'n',
  'e',
  'd',
  'p',
  'q',
  'dp',
  'dq',
  'qi',
  'x5c',
  'x5u',
  'x5t',
  'x5t#S256',
] as const;

/** Members that must never leave the admin API (RFC 7518 §6.3.2, §6.2.2, §6.4.1). */
export const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'] as const;

export const SIGNING_KTYS = new Set(['RSA', 'EC', 'OKP']);

/** Keeps the known members, in go-jose's order; empty strings count as absent. */
export function normaliseJwk(input: Record<string, unknown>): Jwk {
  const out: Record<string, unknown> = {};
  for (const m of MEMBERS) {
    const v = input[m];
    if (m === 'x5c') {
      if (Array.isArray(v) && v.length && v.every((c) => typeof c === 'string')) out[m] = [...v];
    } else if (typeof v === 'string' && v !== '') out[m] = v;
  }
  return out as unknown as Jwk;
}

/** Symmetric keys are all private; asymmetric ones are private when they carry `d`. */
export const hasPrivateMaterial = (k: Jwk): boolean =>
  k.kty === 'oct' || PRIVATE_MEMBERS.some((m) => k[m] !== undefined);

/** The public part of a key, or undefined for a symmetric key (it has none). */
export function toPublicJwk(k: Jwk): Jwk | undefined {
  if (k.kty === 'oct') return undefined;
  const out: Record<string, unknown> = { ...k };
  for (const m of PRIVATE_MEMBERS) delete out[m];
  return out as unknown as Jwk;
}

/**
 * Checks that the key material is usable: asymmetric keys must import with node:crypto (which
 * checks curve, sizes and encodings), symmetric keys need a `k`. Returns a reason, or undefined.
 */
export function invalidJwkReason(k: Jwk): string | undefined {
  if (!k.kty) return 'the key has no kty';
  if (k.kty === 'oct') return k.k ? undefined : 'the symmetric key has no k';
  if (!SIGNING_KTYS.has(k.kty)) return `unknown json web key type '${k.kty}'`;
  try {
    const jwk = { ...k } as Record<string, unknown>;
    delete jwk.x5c;
    if (hasPrivateMaterial(k)) createPrivateKey({ key: jwk as never, format: 'jwk' });
    else createPublicKey({ key: jwk as never, format: 'jwk' });
    return undefined;
  } catch {
    return `the ${k.kty} key material is invalid`;
  }
}

/** The JWS algorithm a key signs with: its `alg`, else the usual one for its type and curve. */
export function signingAlgOf(k: Jwk): string | undefined {
  if (k.alg) return k.alg;
  if (k.kty === 'RSA') return 'RS256';
  if (k.kty === 'EC') return { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' }[k.crv ?? ''];
  if (k.kty === 'OKP' && k.crv === 'Ed25519') return 'EdDSA';
  return undefined;
}

const ENCRYPTION_ALGS = /^(RSA1_5|RSA-OAEP.*|ECDH-ES.*)$/;

/** A key that can sign JWTs: asymmetric, private, not marked for encryption. */
export const canSign = (k: Jwk): boolean =>
  SIGNING_KTYS.has(k.kty) &&
  hasPrivateMaterial(k) &&
  k.use !== 'enc' &&
  !ENCRYPTION_ALGS.test(k.alg ?? '') &&
  signingAlgOf(k) !== undefined;
