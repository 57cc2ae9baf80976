import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const PRIVATE = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Key {
  kid: string;
  kty: string;
  alg: string;
  use: string;
  n?: string;
  [m: string]: unknown;
}

describe('/.well-known/jwks.json', () => {
  const open: TestServer[] = [];
  const dbs: TestDatabase[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    for (const d of dbs.splice(0)) await d.drop();
  });
  afterAll(async () => {
    for (const s of open) await s.close();
  });

  const start = async (o: Parameters<typeof startTestServer>[0] = {}) => {
    const s = await startTestServer(o);
    open.push(s);
    return s;
  };
  const freshDatabase = async () => {
    const d = await createTestDatabase();
    dbs.push(d);
    return d;
  };

  it('answers 20 concurrent first requests from two processes on an empty database with the same generated keys', async () => {
    const database = await freshDatabase();
    const [a, b] = [await start({ database }), await start({ database })];
    const count = async () =>
      Number((await a.container.pool.query('select count(*)::int as n from jwk_keys')).rows[0].n);
    expect(await count()).toBe(0);

    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => fetch(`${(i % 2 ? a : b).publicUrl}/.well-known/jwks.json`)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    expect(new Set(bodies).size).toBe(1);

    const { keys } = JSON.parse(bodies[0]!) as { keys: Key[] };
    expect(keys).toHaveLength(2); // one per reserved set, generated once
    for (const k of keys) {
      expect(k).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
      expect(k.kid).toMatch(UUID);
      expect(Buffer.from(k.n!, 'base64url').length * 8).toBe(4096);
      for (const m of PRIVATE) expect(k).not.toHaveProperty(m);
    }
    const rows = await a.container.pool.query('select sid, kid from jwk_keys order by sid');
    expect(rows.rows.map((r) => r.sid)).toEqual(['hydra.jwt.access-token', 'hydra.openid.id-token']);
    // Default broadcast_keys is [hydra.openid.id-token]; the access-token set follows it.
    expect(keys.map((k) => k.kid)).toEqual([
      rows.rows.find((r) => r.sid === 'hydra.openid.id-token').kid,
      rows.rows.find((r) => r.sid === 'hydra.jwt.access-token').kid,
    ]);
  });

  it('publishes the broadcast sets, newest key first, and only their public parts', async () => {
    const s = await start({ overrides: { 'webfinger.jwks.broadcast_keys': ['custom', 'hydra.openid.id-token'] } });
    const admin = (path: string, body: unknown) =>
      fetch(`${s.adminUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await admin('/admin/keys/custom', { alg: 'ES256', kid: 'c-old' })).status).toBe(201);
    expect((await admin('/admin/keys/custom', { alg: 'EdDSA', kid: 'c-new' })).status).toBe(201);
    expect((await admin('/admin/keys/hydra.openid.id-token', { alg: 'ES384', kid: 'id-1' })).status).toBe(201);
    expect((await admin('/admin/keys/hydra.jwt.access-token', { alg: 'ES256', kid: 'at-1' })).status).toBe(201);
    expect((await admin('/admin/keys/not-broadcast', { alg: 'ES256', kid: 'hidden' })).status).toBe(201);
    // A symmetric key in a broadcast set has no public part and is not published.
    const put = await fetch(`${s.adminUrl}/admin/keys/hydra.jwt.access-token/hmac`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kty: 'oct', kid: 'hmac', alg: 'HS256', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQ' }),
    });
    expect(put.status).toBe(200);

    const r = await fetch(`${s.publicUrl}/.well-known/jwks.json`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    const { keys } = (await r.json()) as { keys: Key[] };
    expect(keys.map((k) => k.kid)).toEqual(['c-new', 'c-old', 'id-1', 'at-1']);
    for (const k of keys) for (const m of PRIVATE) expect(k).not.toHaveProperty(m);
    expect(keys[0]).toEqual({
      use: 'sig',
      kty: 'OKP',
      kid: 'c-new',
      crv: 'Ed25519',
      alg: 'EdDSA',
      x: expect.any(String),
    });
  });

  it('hands other features the newest private key of a set, whose tokens verify against jwks.json', async () => {
    const s = await start();
    const keys = s.container.oauth2.keys;
    const first = await keys.getSigningKey('hydra.openid.id-token'); // generates the set
    expect(first).toMatchObject({ alg: 'RS256', kid: expect.stringMatching(UUID) });
    const created = await fetch(`${s.adminUrl}/admin/keys/hydra.openid.id-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alg: 'ES256', kid: 'rotated' }),
    });
    expect(created.status).toBe(201);
    const signer = await keys.getSigningKey('hydra.openid.id-token');
    expect(signer).toMatchObject({ kid: 'rotated', alg: 'ES256' });
    expect(signer.publicJwk).not.toHaveProperty('d');

    const jwt = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: signer.alg, kid: signer.kid })
      .setIssuer('gatehouse')
      .sign(signer.key);
    const published = (await (await fetch(`${s.publicUrl}/.well-known/jwks.json`)).json()) as { keys: Key[] };
    const { payload } = await jwtVerify(jwt, createLocalJWKSet(published as never));
    expect(payload.sub).toBe('alice');
    const verification = await keys.getVerificationKeys('hydra.openid.id-token');
    expect(verification.keys.map((k) => k.kid)).toEqual(['rotated', first.kid]);
    expect((await keys.getVerificationKeys('no-such-set')).keys).toEqual([]);
  });

  it('generates a signing key when a set holds only public keys', async () => {
    const s = await start();
    const gen = (await (
      await fetch(`${s.adminUrl}/admin/keys/pubonly-src`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ alg: 'ES256', kid: 'pub' }),
      })
    ).json()) as { keys: Key[] };
    const { d: _, ...pub } = gen.keys[0]!;
    await fetch(`${s.adminUrl}/admin/keys/hydra.jwt.access-token`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keys: [pub] }),
    });
    const signer = await s.container.oauth2.keys.getSigningKey('hydra.jwt.access-token');
    expect(signer.alg).toBe('RS256');
    expect(signer.kid).not.toBe('pub');
    const set = (await (await fetch(`${s.adminUrl}/admin/keys/hydra.jwt.access-token`)).json()) as { keys: Key[] };
    expect(set.keys.map((k) => k.kid)).toEqual([signer.kid, 'pub']);
  });
});
