import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { eventually, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const kidsOf = async (s: TestServer) =>
  ((await (await fetch(`${s.publicUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map(
    (k) => k.kid,
  );

const addKey = (s: TestServer, set: string, kid: string) =>
  fetch(`${s.adminUrl}/admin/keys/${set}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ alg: 'ES256', kid }),
  });

describe('JWK cache (db.jwk_cache.*)', () => {
  let database: TestDatabase;
  let cached: TestServer;
  let other: TestServer;
  let uncached: TestServer;
  const clock = manualClock(new Date('2026-01-01T00:00:00Z'));

  beforeAll(async () => {
    database = await createTestDatabase();
    const overrides = { 'db.jwk_cache.enabled': true, 'db.jwk_cache.ttl': '1m', 'db.jwk_cache.size': 100 };
    cached = await startTestServer({ database, clock, overrides });
    other = await startTestServer({ database }); // another process writing keys
    uncached = await startTestServer({ database });
    // Seed both reserved sets with small keys so the test does not wait for RSA generation.
    expect((await addKey(other, 'hydra.openid.id-token', 'id-1')).status).toBe(201);
    expect((await addKey(other, 'hydra.jwt.access-token', 'at-1')).status).toBe(201);
  });
  afterAll(async () => {
    for (const s of [cached, other, uncached]) await s?.close();
    await database?.drop();
  });

  it('sees key changes of other processes at once: every write to jwk_keys notifies every process', async () => {
    expect(await kidsOf(cached)).toEqual(['id-1', 'at-1']); // fills the caches
    expect(await kidsOf(uncached)).toEqual(['id-1', 'at-1']);
    expect((await addKey(other, 'hydra.openid.id-token', 'id-2')).status).toBe(201);
    for (const s of [cached, uncached]) {
      await eventually(async () => (await kidsOf(s)).join() === 'id-2,id-1,at-1');
      expect((await s.container.oauth2.keys.getSigningKey('hydra.openid.id-token')).kid).toBe('id-2');
    }
  });

  it('serves keys and documents from memory while nothing changed, with an ETag and 304 on revalidation', async () => {
    await kidsOf(cached);
    await kidsOf(uncached);
    // Memory is trusted only while notifications arrive: until its LISTEN is up (or after it is
    // re-established) a process reads per use, so wait for both listeners before deleting below.
    for (const s of [cached, uncached]) await eventually(async () => s.container.changes.live());
    await kidsOf(cached);
    await kidsOf(uncached);
    // Deleting rows with the notification switched off proves the answers come from memory.
    await other.container.pool.query('alter table jwk_keys disable trigger jwk_keys_notify_change');
    try {
      await other.container.pool.query("delete from jwk_keys where sid = 'hydra.jwt.access-token'");
      for (let i = 0; i < 5; i++) {
        expect(await kidsOf(cached)).toEqual(['id-2', 'id-1', 'at-1']);
        expect(await kidsOf(uncached)).toEqual(['id-2', 'id-1', 'at-1']);
      }
      expect((await cached.container.oauth2.keys.getVerificationKeys('hydra.jwt.access-token')).keys).toHaveLength(1);
    } finally {
      await other.container.pool.query('alter table jwk_keys enable trigger jwk_keys_notify_change');
    }
    const first = await fetch(`${cached.publicUrl}/.well-known/jwks.json`);
    const etag = first.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(first.headers.get('cache-control')).toBe('public, max-age=60, must-revalidate');
    const again = await fetch(`${cached.publicUrl}/.well-known/jwks.json`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    // A change anywhere (here: a notified no-op update) makes every process rebuild: the set deleted
    // above is regenerated, the ETag moves, and the old one no longer revalidates.
    await other.container.pool.query("update jwk_keys set kid = kid where sid = 'hydra.openid.id-token'");
    const after = await eventually(async () => {
      const kids = await kidsOf(cached);
      return kids.length === 3 && kids[2] !== 'at-1' ? kids : undefined;
    });
    expect(after.slice(0, 2)).toEqual(['id-2', 'id-1']);
    const changed = await fetch(`${cached.publicUrl}/.well-known/jwks.json`, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('rebuilds the prepared discovery document when another process changes the ID-token signing key', async () => {
    const discover = () => fetch(`${uncached.publicUrl}/.well-known/openid-configuration`);
    const first = await discover();
    const etag = first.headers.get('etag') ?? '';
    expect(etag).not.toBe('');
    expect(
      ((await first.json()) as { id_token_signing_alg_values_supported: string[] })
        .id_token_signing_alg_values_supported,
    ).toEqual(['ES256']);
    expect(
      (await fetch(`${uncached.publicUrl}/.well-known/openid-configuration`, { headers: { 'if-none-match': etag } }))
        .status,
    ).toBe(304);
    const r = await fetch(`${other.adminUrl}/admin/keys/hydra.openid.id-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alg: 'ES384', kid: 'id-es384' }),
    });
    expect(r.status).toBe(201);
    const doc = await eventually(async () => {
      const d = (await (await discover()).json()) as { id_token_signing_alg_values_supported: string[] };
      return d.id_token_signing_alg_values_supported[0] === 'ES384' ? d : undefined;
    });
    expect(doc.id_token_signing_alg_values_supported).toEqual(['ES384']);
    expect(
      (await fetch(`${uncached.publicUrl}/.well-known/openid-configuration`, { headers: { 'if-none-match': etag } }))
        .status,
    ).toBe(200);
  });

  it('falls back to the TTL cache while it cannot listen for changes', async () => {
    const keys = cached.container.oauth2.keys;
    await cached.container.changes.close(); // as if the listening connection were gone for good
    clock.advance(60_000); // (entries of the TTL cache are at most a TTL old)
    expect(await kidsOf(cached)).toEqual(await kidsOf(uncached)); // fills the TTL cache
    const before = await kidsOf(cached);
    expect((await addKey(other, 'hydra.openid.id-token', 'id-ttl')).status).toBe(201);
    expect(await kidsOf(cached)).toEqual(before); // not pushed any more: served from the TTL cache
    clock.advance(60_000);
    expect((await kidsOf(cached))[0]).toBe('id-ttl');
    expect((await kidsOf(cached)).length).toBeGreaterThan(before.length);
    expect((await keys.getSigningKey('hydra.openid.id-token')).kid).toBe('id-ttl');
  });

  it('drops its own entry when this process writes the set', async () => {
    await kidsOf(cached);
    expect((await addKey(cached, 'hydra.openid.id-token', 'id-3')).status).toBe(201);
    expect((await kidsOf(cached)).slice(0, 1)).toEqual(['id-3']);
  });
});
