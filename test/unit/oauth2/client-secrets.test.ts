import { describe, expect, it } from 'vitest';
import { hashSecret } from '../../../src/core/crypto/hash.ts';
import { createSecretHasher, generateSecret } from '../../../src/oauth2/clients/secrets.ts';

const PBKDF2 = { algorithm: 'pbkdf2', pbkdf2: { iterations: 1000 }, bcrypt: { cost: 4 } };
const hasher = (system = ['first-system-secret-0123'], extra: Partial<Parameters<typeof createSecretHasher>[0]> = {}) =>
  createSecretHasher({ hashers: PBKDF2, systemSecrets: () => system, ...extra });

describe('client secret hashing', () => {
  it('stores a generated secret as a keyed hash that verifies only the same secret', async () => {
    const h = hasher();
    const secret = generateSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_.~-]{26}$/);
    const stored = h.hashGenerated(secret);
    expect(stored).toMatch(/^\$hmac-sha256\$k=[A-Za-z0-9_-]+\$[A-Za-z0-9_-]{43}$/);
    expect(stored).not.toContain(secret);
    expect(await h.verify('c', secret, stored)).toEqual({ ok: true });
    expect((await h.verify('c', `${secret}x`, stored)).ok).toBe(false);
    expect((await h.verify('c', '', stored)).ok).toBe(false);
    // Another system secret gives another hash: the table alone is not enough to check a guess.
    expect(hasher(['other-system-secret-0123']).hashGenerated(secret)).not.toBe(stored);
  });

  it('re-makes a keyed hash of a rotated-out system secret with the current one; a dropped key verifies nothing', async () => {
    const secret = generateSecret();
    const old = hasher(['old-system-secret-012345']).hashGenerated(secret);
    const rotated = hasher(['new-system-secret-012345', 'old-system-secret-012345']);
    const r = await rotated.verify('c', secret, old);
    expect(r.ok).toBe(true);
    expect(r.rehash).toBe(rotated.hashGenerated(secret));
    expect((await rotated.verify('c', 'wrong', old)).rehash).toBeUndefined();
    expect((await hasher(['new-system-secret-012345']).verify('c', secret, old)).ok).toBe(false);
  });

  it('migrates a slow hash of a generated-shaped secret to the keyed hash on the first success only', async () => {
    const h = hasher();
    const secret = generateSecret();
    const legacy = await hashSecret(secret, { ...PBKDF2, pbkdf2: { iterations: 25000 } });
    expect(await h.verify('c', 'not-it', legacy)).toEqual({ ok: false });
    const r = await h.verify('c', secret, legacy);
    expect(r).toEqual({ ok: true, rehash: h.hashGenerated(secret) });
    const bcryptLegacy = await hashSecret(secret, { ...PBKDF2, algorithm: 'bcrypt' });
    expect((await h.verify('c', secret, bcryptLegacy)).rehash).toBe(h.hashGenerated(secret));
  });

  it('keeps a chosen secret slow, re-hashing it when the configured cost changed', async () => {
    const h = hasher();
    const chosen = 'correct horse battery staple';
    const current = await h.hashChosen(chosen);
    expect(current).toMatch(/^\$pbkdf2-sha256\$i=1000,/);
    expect(await h.verify('c', chosen, current)).toEqual({ ok: true });
    const weaker = await hashSecret(chosen, { ...PBKDF2, pbkdf2: { iterations: 500 } });
    const r = await h.verify('c', chosen, weaker);
    expect(r.ok).toBe(true);
    expect(r.rehash).toMatch(/^\$pbkdf2-sha256\$i=1000,/);
    const bcrypt = await hashSecret(chosen, { ...PBKDF2, algorithm: 'bcrypt' });
    expect((await h.verify('c', chosen, bcrypt)).rehash).toMatch(/^\$pbkdf2-sha256\$i=1000,/);
  });

  it('remembers successes only, keyed by client, stored hash and secret, for a bounded time and count', async () => {
    let now = 1_000;
    const h = hasher(undefined, { cacheSize: 2, cacheTtlMs: 60_000, now: () => now });
    const chosen = 'correct horse battery staple';
    const stored = await h.hashChosen(chosen);
    expect((await h.verify('c', 'wrong horse', stored)).ok).toBe(false);
    expect((await h.verify('c', 'wrong horse', stored)).ok).toBe(false);
    expect(h.cached()).toBe(0);
    expect((await h.verify('c', chosen, stored)).ok).toBe(true);
    expect(h.cached()).toBe(1);
    // A wrong secret still fails while the right one is remembered.
    expect((await h.verify('c', 'wrong horse', stored)).ok).toBe(false);
    // The secret changed (new hash): the remembered success does not carry over.
    const rotated = await h.hashChosen('a new chosen secret');
    expect((await h.verify('c', chosen, rotated)).ok).toBe(false);
    expect((await h.verify('c', 'a new chosen secret', rotated)).ok).toBe(true);
    expect(h.cached()).toBe(2);
    // Bounded: a third success evicts the oldest.
    expect((await h.verify('d', chosen, stored)).ok).toBe(true);
    expect(h.cached()).toBe(2);
    // Expired entries are checked again (and dropped).
    now += 61_000;
    expect((await h.verify('d', chosen, stored)).ok).toBe(true);
  });

  it('costs a keyed check and answers false when there is nothing to check against', async () => {
    const h = hasher();
    await expect(h.decoy('anything')).resolves.toBeUndefined();
  });
});
