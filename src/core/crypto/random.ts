/** CSPRNG helpers and constant-time comparison. */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** `n` random bytes, base64url without padding. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** A string of `length` characters drawn uniformly from `alphabet` (rejection-free via randomInt). */
export function randomString(
  length: number,
  alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~',
): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/**
 * Constant-time string comparison. Both sides are hashed first so that neither the content nor the
 * length of the expected value leaks through timing.
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
