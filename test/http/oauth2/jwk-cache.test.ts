import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
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

  it('serves cached keys until the TTL runs out: updates from other processes are not pushed', async () => {
    expect(await kidsOf(cached)).toEqual(['id-1', 'at-1']); // fills the cache

    expect((await addKey(other, 'hydra.openid.id-token', 'id-2')).status).toBe(201);
    expect(await kidsOf(uncached)).toEqual(['id-2', 'id-1', 'at-1']); // no cache: seen at once
    expect(await kidsOf(cached)).toEqual(['id-1', 'at-1']); // cache hit: not seen yet
    expect((await cached.container.oauth2.keys.getSigningKey('hydra.openid.id-token')).kid).toBe('id-1');

    clock.advance(59_000);
    expect(await kidsOf(cached)).toEqual(['id-1', 'at-1']);
    clock.advance(1_000); // TTL reached: the next read goes to the database
    expect(await kidsOf(cached)).toEqual(['id-2', 'id-1', 'at-1']);
    expect((await cached.container.oauth2.keys.getSigningKey('hydra.openid.id-token')).kid).toBe('id-2');
  });

  it('does not read the database on a hit', async () => {
    await kidsOf(cached);
    // Deleting rows behind the cache's back proves the next answers come from memory.
    await other.container.pool.query("delete from jwk_keys where sid = 'hydra.jwt.access-token'");
    for (let i = 0; i < 5; i++) expect(await kidsOf(cached)).toEqual(['id-2', 'id-1', 'at-1']);
    expect(await kidsOf(uncached)).toHaveLength(3); // (the uncached process regenerates the set at once)
    clock.advance(60_000);
    const after = await kidsOf(cached); // expired: read again, the set now holds the regenerated key
    expect(after).toEqual(await kidsOf(uncached));
    expect(after.slice(0, 2)).toEqual(['id-2', 'id-1']);
    expect(after[2]).not.toBe('at-1');
  });

  it('drops its own entry when this process writes the set', async () => {
    await kidsOf(cached);
    expect((await addKey(cached, 'hydra.openid.id-token', 'id-3')).status).toBe(201);
    expect((await kidsOf(cached)).slice(0, 1)).toEqual(['id-3']);
  });
});
