/**
 * Self-contained encrypted tokens (challenges, verifiers, cookies): compact JWE, `dir` + `A256GCM`,
 * with the key id in the protected header. The payload carries its purpose (`typ`) and expiry so a
 * token of one kind, or an expired one, is refused even though it decrypts.
 */
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from 'jose';
import type { KeyRing } from './keys.ts';

export class TokenError extends Error {
  override name = 'TokenError';
  readonly reason: 'malformed' | 'expired' | 'wrong_type';
  constructor(reason: 'malformed' | 'expired' | 'wrong_type') {
    super(`token ${reason.replace('_', ' ')}`);
    this.reason = reason;
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export interface Sealed<T> {
  typ: string;
  exp: number; // unix seconds
  data: T;
}

export async function sealJson<T>(
  ring: KeyRing,
  typ: string,
  data: T,
  ttlMs: number,
  now = Date.now(),
): Promise<string> {
  const body: Sealed<T> = { typ, exp: Math.floor((now + ttlMs) / 1000), data };
  return new CompactEncrypt(enc.encode(JSON.stringify(body)))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: ring.current.id })
    .encrypt(ring.current.key);
}

/** Decrypts with the key the header names (any rotation key). Throws TokenError, never a jose error. */
export async function openJson<T>(ring: KeyRing, typ: string, token: string, now = Date.now()): Promise<T> {
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    throw new TokenError('malformed');
  }
  const key = kid ? ring.byId(kid) : undefined;
  if (!key) throw new TokenError('malformed');
  let body: Sealed<T>;
  try {
    const { plaintext } = await compactDecrypt(token, key.key, {
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
    });
    body = JSON.parse(dec.decode(plaintext)) as Sealed<T>;
  } catch {
    throw new TokenError('malformed');
  }
  if (body.typ !== typ) throw new TokenError('wrong_type');
  if (typeof body.exp !== 'number' || body.exp * 1000 < now) throw new TokenError('expired');
  return body.data;
}

/** The type of a token without checking it (for debug output); undefined when it does not decrypt. */
export async function peekType(ring: KeyRing, token: string): Promise<Sealed<unknown> | undefined> {
  try {
    const kid = decodeProtectedHeader(token).kid;
    const key = kid ? ring.byId(kid) : undefined;
    if (!key) return undefined;
    const { plaintext } = await compactDecrypt(token, key.key);
    return JSON.parse(dec.decode(plaintext)) as Sealed<unknown>;
  } catch {
    return undefined;
  }
}
