/** CSPRNG helpers and constant-time comparison. */
import { createHash, randomBytes, randomFillSync, randomInt, timingSafeEqual } from 'node:crypto';

/**
 * The CSPRNG's bytes drawn 4 KiB at a time. Each `randomBytes` call costs a system call of its own
 * (OpenSSL checks the process id on every draw), which on a sandboxed kernel is several times the
 * cost of the draw: the token endpoint makes two to four draws per request. Node's own
 * `randomUUID` keeps such a cache. Bytes are copied out and never handed out twice.
 */
class RandomPool {
  private readonly pool = Buffer.allocUnsafeSlow(4096);
  private offset = 4096;

  take(n: number): Buffer {
    if (n > 256) return randomBytes(n);
    if (this.offset + n > this.pool.length) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const out = Buffer.from(this.pool.subarray(this.offset, this.offset + n));
    this.pool.fill(0, this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
}
const pool = new RandomPool();

/** `n` bytes from the CSPRNG (through the pool above). */
export const random = (n: number): Buffer => pool.take(n);

/** `n` random bytes, base64url without padding. */
export const randomToken = (bytes = 32): string => random(bytes).toString('base64url');

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
