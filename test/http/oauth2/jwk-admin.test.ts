import { Configuration, type JsonWebKey, JwkApi } from '@ory/hydra-client';
import { CompactSign, compactVerify, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';

const PRIVATE = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

const statusOf = async (p: Promise<unknown>): Promise<number | undefined> => {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as { response?: { status: number } }).response?.status;
  }
};

describe('JSON Web Keys on the admin API', () => {
  let s: TestServer;
  let sdk: JwkApi;
  beforeAll(async () => {
    s = await startTestServer();
    sdk = new JwkApi(new Configuration({ basePath: s.adminUrl }));
  });
  afterAll(async () => s?.close());

  const admin = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    fetch(`${s.adminUrl}${path}`, {
      ...init,
      ...(init.json !== undefined
        ? { body: JSON.stringify(init.json), headers: { 'content-type': 'application/json' } }
        : {}),
    });

  it('creates, reads, replaces and deletes a key through the Hydra SDK', async () => {
    const created = await sdk.createJsonWebKeySet({
      set: 'sdk-set',
      createJsonWebKeySet: { alg: 'ES256', kid: 'key-bar', use: 'sig' },
    });
    expect(created.status).toBe(201);
    expect(created.data.keys).toHaveLength(1);
    const key = created.data.keys![0]!;
    expect(key).toMatchObject({ kid: 'key-bar', alg: 'ES256', use: 'sig', kty: 'EC', crv: 'P-256' });
    expect(key.d).toBeTruthy(); // the admin API returns private keys

    const one = await sdk.getJsonWebKey({ set: 'sdk-set', kid: 'key-bar' });
    expect(one.data.keys).toEqual([key]);
    const set = await sdk.getJsonWebKeySet({ set: 'sdk-set' });
    expect(set.data.keys).toEqual([key]);

    const changed: JsonWebKey = { ...key, alg: 'ES256', use: 'enc' };
    const put = await sdk.setJsonWebKey({ set: 'sdk-set', kid: 'key-bar', jsonWebKey: changed });
    expect(put.data).toMatchObject({ kid: 'key-bar', use: 'enc' });
    expect((await sdk.getJsonWebKey({ set: 'sdk-set', kid: 'key-bar' })).data.keys![0]!.use).toBe('enc');

    await sdk.deleteJsonWebKey({ set: 'sdk-set', kid: 'key-bar' });
    expect(await statusOf(sdk.getJsonWebKey({ set: 'sdk-set', kid: 'key-bar' }))).toBe(404);
    expect(await statusOf(sdk.getJsonWebKeySet({ set: 'sdk-set' }))).toBe(404);
  });

  it('replaces and deletes whole sets through the Hydra SDK', async () => {
    const a = (
      await sdk.createJsonWebKeySet({ set: 'sdk-set2', createJsonWebKeySet: { alg: 'EdDSA', kid: 'a', use: 'sig' } })
    ).data.keys![0]!;
    const b = (
      await sdk.createJsonWebKeySet({ set: 'other', createJsonWebKeySet: { alg: 'ES384', kid: 'b', use: 'sig' } })
    ).data.keys![0]!;
    const replaced = await sdk.setJsonWebKeySet({ set: 'sdk-set2', jsonWebKeySet: { keys: [b, a] } });
    expect(replaced.data.keys!.map((k) => k.kid)).toEqual(['b', 'a']);
    // The first key of a replaced set is the newest, so a GET returns the set in the same order.
    expect((await sdk.getJsonWebKeySet({ set: 'sdk-set2' })).data.keys).toEqual([b, a]);
    await sdk.deleteJsonWebKeySet({ set: 'sdk-set2' });
    expect(await statusOf(sdk.getJsonWebKeySet({ set: 'sdk-set2' }))).toBe(404);
    expect(await statusOf(sdk.getJsonWebKey({ set: 'sdk-set2', kid: 'a' }))).toBe(404);
  });

  it('answers POST with 201, Location <issuer>/keys/<set> and the new key first in the set', async () => {
    const r1 = await admin('/admin/keys/loc-set', { method: 'POST', json: { alg: 'ES256', use: 'sig', kid: 'k1' } });
    expect(r1.status).toBe(201);
    expect(r1.headers.get('location')).toBe(`${s.publicUrl}/keys/loc-set`);
    const r2 = await admin('/admin/keys/loc-set', { method: 'POST', json: { alg: 'ES256', use: 'sig', kid: 'k2' } });
    expect(r2.status).toBe(201);
    const set = (await (await admin('/admin/keys/loc-set')).json()) as { keys: JsonWebKey[] };
    expect(set.keys.map((k) => k.kid)).toEqual(['k2', 'k1']);
    // The prefix-less admin path is the same route (Hydra's admin listener adds /admin).
    expect((await admin('/keys/loc-set')).status).toBe(200);
  });

  it('defaults use to sig and kid to a UUID when they are empty', async () => {
    const r = await admin('/admin/keys/defaults', { method: 'POST', json: { alg: 'ES512', use: '', kid: '' } });
    expect(r.status).toBe(201);
    const [k] = ((await r.json()) as { keys: JsonWebKey[] }).keys;
    expect(k).toMatchObject({ use: 'sig', alg: 'ES512', kty: 'EC', crv: 'P-521' });
    expect(k!.kid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it.each([
    ['RS256', { kty: 'RSA', use: 'sig' }, 4096],
    ['RS384', { kty: 'RSA', use: 'sig' }, 4096],
    ['RS512', { kty: 'RSA', use: 'sig' }, 4096],
    ['PS256', { kty: 'RSA', use: 'sig' }, 2048],
    ['PS384', { kty: 'RSA', use: 'sig' }, 2048],
    ['PS512', { kty: 'RSA', use: 'sig' }, 2048],
    ['ES256', { kty: 'EC', crv: 'P-256', use: 'sig' }, 0],
    ['ES384', { kty: 'EC', crv: 'P-384', use: 'sig' }, 0],
    ['ES512', { kty: 'EC', crv: 'P-521', use: 'sig' }, 0],
    ['EdDSA', { kty: 'OKP', crv: 'Ed25519', use: 'sig' }, 0],
    ['RSA-OAEP', { kty: 'RSA', use: 'enc' }, 2048],
    ['ECDH-ES', { kty: 'EC', crv: 'P-256', use: 'enc' }, 0],
  ])('generates %s keys', async (alg, shape, bits) => {
    const r = await admin(`/admin/keys/alg-${alg}`, { method: 'POST', json: { alg, kid: `k-${alg}` } });
    expect(r.status).toBe(201);
    const [k] = ((await r.json()) as { keys: JsonWebKey[] }).keys;
    expect(k).toMatchObject({ ...shape, alg, kid: `k-${alg}` });
    expect(k!.d).toBeTruthy();
    if (bits) expect(Buffer.from(k!.n!, 'base64url').length * 8).toBe(bits);
    if (shape.use === 'sig') {
      // The generated private key signs and its public part verifies.
      const priv = await importJWK(k as never, alg);
      const jws = await new CompactSign(new TextEncoder().encode('hi')).setProtectedHeader({ alg }).sign(priv);
      const pub = Object.fromEntries(Object.entries(k!).filter(([m]) => !PRIVATE.includes(m)));
      await expect(compactVerify(jws, await importJWK(pub as never, alg))).resolves.toBeTruthy();
    }
  });

  it('refuses symmetric and unknown algorithms with Hydra’s 400', async () => {
    for (const alg of ['HS256', 'HS512', 'none', '']) {
      const r = await admin('/admin/keys/sym', { method: 'POST', json: { alg, use: 'sig', kid: 'x' } });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ error: 'Bad Request', error_description: 'Unsupported key algorithm' });
    }
    expect((await admin('/admin/keys/sym')).status).toBe(404);
  });

  it('answers unknown sets and keys with 404 JSON', async () => {
    const set = await admin('/admin/keys/nope');
    expect(set.status).toBe(404);
    expect(await set.json()).toEqual({
      error: 'Not Found',
      error_description: 'Unable to locate the requested resource',
    });
    const key = await admin('/admin/keys/nope/nokid');
    expect(key.status).toBe(404);
    expect(await key.json()).toEqual({ error: 'Unable to locate the resource', error_description: '' });
  });

  it('answers a duplicate kid in a set with 409', async () => {
    await admin('/admin/keys/dupe', { method: 'POST', json: { alg: 'ES256', kid: 'same' } });
    const r = await admin('/admin/keys/dupe', { method: 'POST', json: { alg: 'ES256', kid: 'same' } });
    expect(r.status).toBe(409);
    expect(((await r.json()) as { error: string }).error).toBe(
      'Unable to insert or update resource because a resource with that value exists already',
    );
    const put = await admin('/admin/keys/dupe', {
      method: 'PUT',
      json: {
        keys: [
          { kty: 'oct', k: 'c2VjcmV0', kid: 'z' },
          { kty: 'oct', k: 'b3RoZXI', kid: 'z' },
        ],
      },
    });
    expect(put.status).toBe(400);
  });

  it('uses the body kid on PUT /admin/keys/{set}/{kid}, and the path kid when the body has none', async () => {
    const k = (
      (await (await admin('/admin/keys/putkey', { method: 'POST', json: { alg: 'ES256', kid: 'orig' } })).json()) as {
        keys: JsonWebKey[];
      }
    ).keys[0]!;
    const r = await admin('/admin/keys/putkey/ignored', { method: 'PUT', json: { ...k, kid: 'from-body' } });
    expect(r.status).toBe(200);
    expect(((await r.json()) as JsonWebKey).kid).toBe('from-body');
    expect((await admin('/admin/keys/putkey/from-body')).status).toBe(200);
    expect((await admin('/admin/keys/putkey/ignored')).status).toBe(404);
    const { kid: _, ...noKid } = k;
    const r2 = await admin('/admin/keys/putkey/path-kid', { method: 'PUT', json: noKid });
    expect(r2.status).toBe(200);
    expect(((await r2.json()) as JsonWebKey).kid).toBe('path-kid');
  });

  it('rejects malformed keys and bodies with 400 JSON, never a 500', async () => {
    const bad = [
      ['/admin/keys/bad', 'PUT', { keys: 'nope' }],
      ['/admin/keys/bad', 'PUT', { keys: [{ kty: 'RSA', kid: 'x', n: 'AQAB' }] }],
      ['/admin/keys/bad', 'PUT', { keys: [{ kty: 'XYZ', kid: 'x' }] }],
      ['/admin/keys/bad', 'PUT', { keys: [{ kty: 'EC', crv: 'P-256', kid: 'x', x: 'AA', y: 'AA' }] }],
      ['/admin/keys/bad/x', 'PUT', { kty: 'oct', kid: 'x' }],
      ['/admin/keys/bad/x', 'PUT', ['not', 'an', 'object']],
      ['/admin/keys/bad', 'POST', { alg: 5 }],
      [`/admin/keys/${'s'.repeat(256)}`, 'POST', { alg: 'ES256' }],
    ] as const;
    for (const [path, method, json] of bad) {
      const r = await admin(path, { method, json });
      expect(r.status, `${method} ${JSON.stringify(json)}`).toBe(400);
      expect(((await r.json()) as { error: string }).error).toBeTruthy();
    }
    const notJson = await fetch(`${s.adminUrl}/admin/keys/bad`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"keys":',
    });
    expect(notJson.status).toBe(400);
    expect((await admin('/admin/keys/bad')).status).toBe(404);
  });

  it('stores imported public-only and symmetric keys and returns them as given', async () => {
    const ec = (
      (await (await admin('/admin/keys/src', { method: 'POST', json: { alg: 'ES256', kid: 'e' } })).json()) as {
        keys: JsonWebKey[];
      }
    ).keys[0]!;
    const { d: _, ...pub } = ec;
    const oct = { kty: 'oct', kid: 'hmac', alg: 'HS256', use: 'sig', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQ' };
    const r = await admin('/admin/keys/imported', { method: 'PUT', json: { keys: [pub, oct] } });
    expect(r.status).toBe(200);
    const got = (await (await admin('/admin/keys/imported')).json()) as { keys: JsonWebKey[] };
    expect(got.keys).toEqual([pub, oct]);
  });

  it('answers DELETE of an unknown set or key with 204, as Hydra does', async () => {
    expect((await admin('/admin/keys/never', { method: 'DELETE' })).status).toBe(204);
    expect((await admin('/admin/keys/never/kid', { method: 'DELETE' })).status).toBe(204);
  });
});
