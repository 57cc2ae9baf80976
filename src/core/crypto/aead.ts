/**
 * Encryption at rest (private JWKs, session claims, cloud directory tokens): AES-256-GCM.
 * Format: `<keyId>.<iv>.<ciphertext+tag>` (base64url parts), so rotated secrets keep old rows readable.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { type KeyRing, secretKey } from './keys.ts';
import { random } from './random.ts';

export class DecryptError extends Error {
  override name = 'DecryptError';
  constructor() {
    super('the data cannot be decrypted with any configured secret');
  }
}

export function seal(ring: KeyRing, plaintext: string, aad = ''): string {
  const iv = random(12);
  const c = createCipheriv('aes-256-gcm', secretKey(ring.current.key), iv);
  if (aad) c.setAAD(Buffer.from(aad));
  const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final(), c.getAuthTag()]);
  return `${ring.current.id}.${iv.toString('base64url')}.${body.toString('base64url')}`;
}

export function open(ring: KeyRing, sealed: string, aad = ''): string {
  const [id, ivB64, bodyB64] = sealed.split('.');
  const key = id ? ring.byId(id) : undefined;
  if (!key || !ivB64 || !bodyB64) throw new DecryptError();
  try {
    const body = Buffer.from(bodyB64, 'base64url');
    const d = createDecipheriv('aes-256-gcm', secretKey(key.key), Buffer.from(ivB64, 'base64url'));
    if (aad) d.setAAD(Buffer.from(aad));
    d.setAuthTag(body.subarray(body.length - 16));
    return Buffer.concat([d.update(body.subarray(0, body.length - 16)), d.final()]).toString('utf8');
  } catch {
    throw new DecryptError();
  }
}

export const sealJson = (ring: KeyRing, value: unknown, aad = '') => seal(ring, JSON.stringify(value), aad);
export const openJson = <T>(ring: KeyRing, sealed: string, aad = ''): T => JSON.parse(open(ring, sealed, aad)) as T;
