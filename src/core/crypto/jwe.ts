/**
 * Self-contained encrypted tokens (challenges, verifiers, cookies): compact JWE (RFC 7516 §7.1),
 * `dir` + `A256GCM`, with the key id in the protected header. The payload carries its purpose
 * (`typ`) and expiry so a token of one kind, or an expired one, is refused even though it decrypts.
 *
 * Made and read with node:crypto's AES-256-GCM directly rather than through jose: jose goes through
 * WebCrypto, which imports the key and schedules an asynchronous job for every token, about three
 * times the CPU of the cipher itself, several times per authorization flow. The format is the
 * standard one (test/unit/core/crypto.test.ts reads and writes it with jose both ways): the
 * protected header, an empty encrypted key, the 96-bit IV, the ciphertext and the 128-bit tag, the
 * header's base64url text as additional authenticated data (RFC 7516 §5.1, step 14).
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { type KeyRing, secretKey } from './keys.ts';
import { random } from './random.ts';

export class TokenError extends Error {
  override name = 'TokenError';
  readonly reason: 'malformed' | 'expired' | 'wrong_type';
  constructor(reason: 'malformed' | 'expired' | 'wrong_type') {
    super(`token ${reason.replace('_', ' ')}`);
    this.reason = reason;
  }
}

export interface Sealed<T> {
  typ: string;
  exp: number; // unix seconds
  data: T;
}

const b64u = (b: Buffer) => b.toString('base64url');

export async function sealJson<T>(
  ring: KeyRing,
  typ: string,
  data: T,
  ttlMs: number,
  now = Date.now(),
): Promise<string> {
  const body: Sealed<T> = { typ, exp: Math.floor((now + ttlMs) / 1000), data };
  const header = b64u(Buffer.from(JSON.stringify({ alg: 'dir', enc: 'A256GCM', kid: ring.current.id })));
  const iv = random(12);
  const c = createCipheriv('aes-256-gcm', secretKey(ring.current.key), iv);
  c.setAAD(Buffer.from(header, 'ascii'));
  const ciphertext = Buffer.concat([c.update(JSON.stringify(body), 'utf8'), c.final()]);
  return `${header}..${b64u(iv)}.${b64u(ciphertext)}.${b64u(c.getAuthTag())}`;
}

/** The payload of a token under any key of the ring, unchecked; throws TokenError('malformed'). */
function decrypt(ring: KeyRing, token: string): Sealed<unknown> {
  const parts = token.split('.');
  if (parts.length !== 5 || parts[1] !== '') throw new TokenError('malformed');
  const [header, , ivB64, ciphertextB64, tagB64] = parts as [string, string, string, string, string];
  try {
    const h = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (h.alg !== 'dir' || h.enc !== 'A256GCM' || typeof h.kid !== 'string' || 'crit' in h || 'zip' in h) {
      throw new TokenError('malformed');
    }
    const key = ring.byId(h.kid);
    const iv = Buffer.from(ivB64, 'base64url');
    const tag = Buffer.from(tagB64, 'base64url');
    if (!key || iv.length !== 12 || tag.length !== 16) throw new TokenError('malformed');
    const d = createDecipheriv('aes-256-gcm', secretKey(key.key), iv);
    d.setAAD(Buffer.from(header, 'ascii'));
    d.setAuthTag(tag);
    const plaintext = Buffer.concat([d.update(Buffer.from(ciphertextB64, 'base64url')), d.final()]);
    return JSON.parse(plaintext.toString('utf8')) as Sealed<unknown>;
  } catch {
    throw new TokenError('malformed');
  }
}

/** Decrypts with the key the header names (any rotation key). Throws TokenError, never a crypto error. */
export async function openJson<T>(ring: KeyRing, typ: string, token: string, now = Date.now()): Promise<T> {
  const body = decrypt(ring, token) as Sealed<T>;
  if (body.typ !== typ) throw new TokenError('wrong_type');
  if (typeof body.exp !== 'number' || body.exp * 1000 < now) throw new TokenError('expired');
  return body.data;
}

/** The type of a token without checking it (for debug output); undefined when it does not decrypt. */
export async function peekType(ring: KeyRing, token: string): Promise<Sealed<unknown> | undefined> {
  try {
    return decrypt(ring, token);
  } catch {
    return undefined;
  }
}
