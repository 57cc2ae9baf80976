import { CompactEncrypt, compactDecrypt } from 'jose';
import { describe, expect, it } from 'vitest';
import { open, seal } from '../../../src/core/crypto/aead.ts';
import { hashSecret, verifySecret } from '../../../src/core/crypto/hash.ts';
import { generateOpaqueToken, verifyOpaqueToken } from '../../../src/core/crypto/hmac.ts';
import { openJson, sealJson, TokenError } from '../../../src/core/crypto/jwe.ts';
import { keyRing } from '../../../src/core/crypto/keys.ts';
import { random, randomString, safeEqual } from '../../../src/core/crypto/random.ts';

const OLD = 'old-secret-0123456789abcdef';
const NEW = 'new-secret-0123456789abcdef';

describe('crypto core', () => {
  it('seals JSON in a JWE that only the same kind of reader accepts, and keeps rotated secrets readable', async () => {
    const old = keyRing([OLD], 'flow');
    const rotated = keyRing([NEW, OLD], 'flow');
    const t = await sealJson(old, 'login_challenge', { a: 1 }, 60_000);
    expect(await openJson(rotated, 'login_challenge', t)).toEqual({ a: 1 });
    await expect(openJson(rotated, 'consent_challenge', t)).rejects.toMatchObject({ reason: 'wrong_type' });
    await expect(openJson(keyRing([NEW], 'flow'), 'login_challenge', t)).rejects.toBeInstanceOf(TokenError);
    await expect(openJson(keyRing([OLD], 'cookie'), 'login_challenge', t)).rejects.toMatchObject({
      reason: 'malformed',
    });
    const expired = await sealJson(old, 'x', {}, 1000, Date.now() - 5000);
    await expect(openJson(old, 'x', expired)).rejects.toMatchObject({ reason: 'expired' });
    const tampered = `${t.slice(0, -3)}${t.slice(-3) === 'AAA' ? 'BBB' : 'AAA'}`;
    await expect(openJson(old, 'login_challenge', tampered)).rejects.toMatchObject({ reason: 'malformed' });
    await expect(openJson(old, 'login_challenge', 'not-a-token')).rejects.toMatchObject({ reason: 'malformed' });
  });

  it('writes and reads standard compact JWE (dir, A256GCM): jose reads ours and we read jose’s', async () => {
    const ring = keyRing([OLD], 'flow');
    const ours = await sealJson(ring, 'login_challenge', { a: 'ü' }, 60_000);
    const { plaintext, protectedHeader } = await compactDecrypt(ours, ring.current.key, {
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
    });
    expect(protectedHeader).toEqual({ alg: 'dir', enc: 'A256GCM', kid: ring.current.id });
    expect(JSON.parse(new TextDecoder().decode(plaintext))).toMatchObject({ typ: 'login_challenge', data: { a: 'ü' } });
    const body = { typ: 'login_challenge', exp: Math.floor(Date.now() / 1000) + 60, data: { b: 2 } };
    const theirs = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(body)))
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: ring.current.id })
      .encrypt(ring.current.key);
    expect(await openJson(ring, 'login_challenge', theirs)).toEqual({ b: 2 });
    // The header is authenticated: another header over the same ciphertext is refused.
    const [, ...rest] = theirs.split('.');
    const header = Buffer.from(JSON.stringify({ enc: 'A256GCM', alg: 'dir', kid: ring.current.id })).toString(
      'base64url',
    );
    await expect(openJson(ring, 'login_challenge', [header, ...rest].join('.'))).rejects.toMatchObject({
      reason: 'malformed',
    });
    const other = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(body)))
      .setProtectedHeader({ alg: 'dir', enc: 'A128GCM', kid: ring.current.id })
      .encrypt(ring.current.key.subarray(0, 16));
    await expect(openJson(ring, 'login_challenge', other)).rejects.toMatchObject({ reason: 'malformed' });
  });

  it('encrypts at rest with AES-GCM, readable after rotation, refusing other secrets', () => {
    const s = seal(keyRing([OLD], 'jwk'), 'private key');
    expect(open(keyRing([NEW, OLD], 'jwk'), s)).toBe('private key');
    expect(() => open(keyRing([NEW], 'jwk'), s)).toThrow(/cannot be decrypted/);
    expect(() => open(keyRing([OLD], 'jwk'), s, 'other-aad')).toThrow(/cannot be decrypted/);
  });

  it('makes Hydra-shaped opaque tokens and verifies them under any rotation secret', () => {
    const { token, signature } = generateOpaqueToken('ory_at_', [OLD]);
    expect(token).toMatch(/^ory_at_[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$/);
    expect(token.endsWith(signature)).toBe(true);
    expect(verifyOpaqueToken('ory_at_', token, [NEW, OLD])).toBe(signature);
    expect(verifyOpaqueToken('ory_at_', token, [NEW])).toBeUndefined();
    expect(verifyOpaqueToken('ory_rt_', token, [OLD])).toBeUndefined();
    expect(verifyOpaqueToken('ory_at_', `${token.slice(0, -1)}x`, [OLD])).toBeUndefined();
  });

  it('hashes client secrets with pbkdf2 or bcrypt and verifies them', async () => {
    const cfg = { algorithm: 'pbkdf2', pbkdf2: { iterations: 1000 }, bcrypt: { cost: 4 } };
    const h = await hashSecret('s3cret-value', cfg);
    expect(h).toMatch(/^\$pbkdf2-sha256\$i=1000,l=32\$/);
    expect(await verifySecret('s3cret-value', h)).toBe(true);
    expect(await verifySecret('s3cret-valuf', h)).toBe(false);
    const b = await hashSecret('s3cret-value', { ...cfg, algorithm: 'bcrypt' });
    expect(b).toMatch(/^\$2[aby]\$04\$/);
    expect(await verifySecret('s3cret-value', b)).toBe(true);
    expect(await verifySecret('nope', b)).toBe(false);
  });

  it('compares in constant time and draws random strings from the alphabet', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(randomString(26)).toMatch(/^[a-zA-Z0-9_.~-]{26}$/);
  });

  it('hands out pooled random bytes never twice, in copies of their own, across pool refills', () => {
    const seen = new Set<string>();
    const draws = Array.from({ length: 2_000 }, (_, i) => random(i % 3 === 0 ? 12 : 32)); // several 4 KiB refills
    for (const d of draws) seen.add(d.toString('hex'));
    expect(seen.size).toBe(draws.length);
    expect(draws.every((d, i) => d.length === (i % 3 === 0 ? 12 : 32))).toBe(true);
    // A copy: changing one draw changes no other.
    const [a, b] = [random(16), random(16)];
    a.fill(0);
    expect(b.equals(Buffer.alloc(16))).toBe(false);
    expect(random(1000)).toHaveLength(1000);
  });
});
