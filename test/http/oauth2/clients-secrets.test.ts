import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, verifySecret } from '../../../src/core/crypto/hash.ts';
import { eventually, LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { adminApi, call } from '../../helpers/clients.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

async function row(s: TestServer, id: string) {
  const r = await s.container.pool.query(
    'select client_secret_hash, registration_access_token_signature from oauth2_clients where id = $1',
    [id],
  );
  return r.rows[0] as { client_secret_hash: string | null; registration_access_token_signature: string };
}

describe('client secrets', () => {
  const logs = new LogCapture();
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ log: logs.logger('trace'), overrides: { 'log.level': 'trace' } });
  });
  afterAll(async () => s?.close());

  it('returns a generated secret once, never on GET or list, and stores only its keyed hash', async () => {
    const api = adminApi(s.adminUrl);
    const { data: c } = await api.createOAuth2Client({ oAuth2Client: { client_name: 'secretive' } });
    const secret = c.client_secret!;
    expect(secret).toMatch(/^[A-Za-z0-9_.~-]{26}$/);
    const got = await call(s.adminUrl, 'GET', `/admin/clients/${c.client_id}`);
    expect(got.body).not.toHaveProperty('client_secret');
    const list = await call(s.adminUrl, 'GET', '/admin/clients');
    expect(list.body.find((x: { client_id: string }) => x.client_id === c.client_id)).not.toHaveProperty(
      'client_secret',
    );
    expect(JSON.stringify(list.body)).not.toContain(secret);
    const stored = await row(s, c.client_id!);
    expect(stored.client_secret_hash).toMatch(/^\$hmac-sha256\$k=[A-Za-z0-9_-]+\$[A-Za-z0-9_-]{43}$/);
    expect(stored.client_secret_hash).not.toContain(secret);
    expect(await s.container.oauth2.clients.authenticateClient(c.client_id!, secret)).toBeDefined();
    expect(await s.container.oauth2.clients.authenticateClient(c.client_id!, `${secret.slice(1)}x`)).toBeUndefined();
    // The registration access token is kept as its signature only.
    expect(c.registration_access_token!.endsWith(stored.registration_access_token_signature)).toBe(true);
    expect(stored.registration_access_token_signature).not.toContain('ory_at_');
  });

  it('keeps a chosen secret under the slow PBKDF2 hash, and authenticateClient checks id+secret', async () => {
    const { data: c } = await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'auth-me', client_secret: 'correct horse battery staple' },
    });
    expect(c.client_secret).toBe('correct horse battery staple');
    const hash = (await row(s, 'auth-me')).client_secret_hash!;
    expect(hash).toMatch(/^\$pbkdf2-sha256\$i=25000,l=32\$/);
    expect(await verifySecret('correct horse battery staple', hash)).toBe(true);
    const svc = s.container.oauth2.clients;
    expect((await svc.authenticateClient('auth-me', 'correct horse battery staple'))?.client_id).toBe('auth-me');
    expect(await svc.authenticateClient('auth-me', 'correct horse battery stapler')).toBeUndefined();
    expect(await svc.authenticateClient('auth-me', '')).toBeUndefined();
    expect(await svc.authenticateClient('nobody', 'correct horse battery staple')).toBeUndefined();
    expect((await svc.getClient('auth-me'))?.client_id).toBe('auth-me');
    expect(await svc.getClient('nobody')).toBeUndefined();
  });

  it('gives a public client (token_endpoint_auth_method none) no secret', async () => {
    const r = await call(s.adminUrl, 'POST', '/admin/clients', {
      client_id: 'spa',
      token_endpoint_auth_method: 'none',
    });
    expect(r.status).toBe(201);
    expect(r.body).not.toHaveProperty('client_secret');
    expect(r.body.token_endpoint_auth_method).toBe('none');
    expect((await row(s, 'spa')).client_secret_hash).toBeNull();
    expect(await s.container.oauth2.clients.authenticateClient('spa', '')).toBeUndefined();
  });

  it('sets a new secret through PUT and PATCH: hashed again, echoed once, the old one stops working', async () => {
    const { body: c } = await call(s.adminUrl, 'POST', '/admin/clients', {
      client_id: 'rotate',
      client_secret: 'first-secret',
    });
    const put = await call(s.adminUrl, 'PUT', '/admin/clients/rotate', { client_secret: 'second-secret' });
    expect(put.body.client_secret).toBe('second-secret');
    const svc = s.container.oauth2.clients;
    expect(await svc.authenticateClient('rotate', 'first-secret')).toBeUndefined();
    expect(await svc.authenticateClient('rotate', 'second-secret')).toBeDefined();
    const untouched = await call(s.adminUrl, 'PATCH', '/admin/clients/rotate', [
      { op: 'replace', path: '/client_name', value: 'rotated' },
    ]);
    expect(untouched.body).not.toHaveProperty('client_secret');
    expect(await svc.authenticateClient('rotate', 'second-secret')).toBeDefined();
    const patched = await call(s.adminUrl, 'PATCH', '/admin/clients/rotate', [
      { op: 'replace', path: '/client_secret', value: 'third-secret' },
    ]);
    expect(patched.body.client_secret).toBe('third-secret');
    expect(await svc.authenticateClient('rotate', 'second-secret')).toBeUndefined();
    expect(await svc.authenticateClient('rotate', 'third-secret')).toBeDefined();
    const hash = (await row(s, 'rotate')).client_secret_hash!;
    expect(hash).toMatch(/^\$pbkdf2-sha256\$/);
    const short = await call(s.adminUrl, 'PATCH', '/admin/clients/rotate', [
      { op: 'replace', path: '/client_secret', value: 'abc' },
    ]);
    expect(short.status).toBe(400);
    expect(c.client_secret).toBe('first-secret');
  });

  it('never writes a secret, a hash or a registration token to the logs', async () => {
    const secret = 'log-me-never-0123456789';
    const { body: c } = await call(s.adminUrl, 'POST', '/admin/clients', { client_id: 'quiet', client_secret: secret });
    await call(s.adminUrl, 'PUT', '/admin/clients/quiet', { client_secret: `${secret}-2` });
    await call(s.adminUrl, 'PATCH', '/admin/clients/quiet', [
      { op: 'replace', path: '/client_secret', value: `${secret}-3` },
    ]);
    await call(s.adminUrl, 'POST', '/admin/clients', { client_id: 'quiet', client_secret: secret }); // 409
    await call(s.adminUrl, 'POST', '/admin/clients', { client_secret: 'tiny' }); // 400
    await s.container.oauth2.clients.authenticateClient('quiet', secret);
    const hash = (await row(s, 'quiet')).client_secret_hash!;
    expect(logs.lines.length).toBeGreaterThan(0);
    const text = logs.lines.join('\n');
    for (const needle of [secret, 'tiny', hash, c.registration_access_token, hash.split('$').at(-1)!]) {
      expect(text).not.toContain(needle);
    }
  });
});

describe('client secrets: migration of stored hashes at the token endpoint', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  const token = (id: string, secret: string) =>
    fetch(`${s.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
  const setHash = (id: string, hash: string) =>
    s.container.pool.query('update oauth2_clients set client_secret_hash = $2 where id = $1', [id, hash]);

  it('verifies a PBKDF2 hash of a generated secret (as older versions stored it) and replaces it by the keyed hash on success', async () => {
    const { data: c } = await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'legacy', grant_types: ['client_credentials'] },
    });
    const secret = c.client_secret!;
    const keyed = (await row(s, 'legacy')).client_secret_hash!;
    const legacy = await hashSecret(secret, {
      algorithm: 'pbkdf2',
      pbkdf2: { iterations: 25000 },
      bcrypt: { cost: 10 },
    });
    await setHash('legacy', legacy);
    expect((await token('legacy', `${secret.slice(1)}x`)).status).toBe(401);
    expect((await row(s, 'legacy')).client_secret_hash).toBe(legacy);
    expect((await token('legacy', secret)).status).toBe(200);
    expect((await row(s, 'legacy')).client_secret_hash).toBe(keyed);
    expect((await token('legacy', secret)).status).toBe(200);
  });

  it('re-hashes a chosen secret stored with bcrypt at the configured PBKDF2 cost on success', async () => {
    await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: {
        client_id: 'chosen-bc',
        client_secret: 'a secret somebody chose',
        grant_types: ['client_credentials'],
      },
    });
    await setHash(
      'chosen-bc',
      await hashSecret('a secret somebody chose', {
        algorithm: 'bcrypt',
        pbkdf2: { iterations: 1 },
        bcrypt: { cost: 4 },
      }),
    );
    expect((await token('chosen-bc', 'a secret somebody chose')).status).toBe(200);
    expect((await row(s, 'chosen-bc')).client_secret_hash).toMatch(/^\$pbkdf2-sha256\$i=25000,l=32\$/);
  });

  it('does not let a remembered success outlive a secret change made by another process', async () => {
    await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'cached', client_secret: 'first chosen secret', grant_types: ['client_credentials'] },
    });
    expect((await token('cached', 'first chosen secret')).status).toBe(200);
    expect((await token('cached', 'first chosen secret')).status).toBe(200);
    // Another process rotates the secret: only the row changes.
    await setHash(
      'cached',
      await hashSecret('second chosen secret', {
        algorithm: 'pbkdf2',
        pbkdf2: { iterations: 25000 },
        bcrypt: { cost: 10 },
      }),
    );
    // The row change is notified; once the new row is read, the remembered success of the old
    // secret does not match it (the stored hash is part of the cache key).
    await eventually(async () => (await token('cached', 'second chosen secret')).status === 200);
    expect((await token('cached', 'first chosen secret')).status).toBe(401);
  });

  it('answers an unknown client and a wrong secret alike', async () => {
    await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'known', grant_types: ['client_credentials'] },
    });
    const unknown = await token('unknown', 'whatever-secret');
    const wrong = await token('known', 'whatever-secret');
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(await unknown.json()).toEqual(await wrong.json());
  });
});

describe('client secrets with oauth2.hashers.algorithm = bcrypt', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ overrides: { 'oauth2.hashers.algorithm': 'bcrypt', 'oauth2.hashers.bcrypt.cost': 4 } });
  });
  afterAll(async () => s?.close());

  it('stores a bcrypt hash with the configured cost and verifies against it', async () => {
    const { data: c } = await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'bc', client_secret: 'a secret somebody chose' },
    });
    const hash = (await row(s, 'bc')).client_secret_hash!;
    expect(hash).toMatch(/^\$2[aby]\$04\$/);
    expect(await s.container.oauth2.clients.authenticateClient('bc', c.client_secret!)).toBeDefined();
    expect(await s.container.oauth2.clients.authenticateClient('bc', 'wrong-secret')).toBeUndefined();
  });
});

describe('clients kept in memory for authentication, across processes', () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase();
    a = await startTestServer({ database });
    b = await startTestServer({ database });
  });
  afterAll(async () => {
    for (const x of [a, b]) await x?.close();
    await database?.drop();
  });

  const tokenAt = (t: TestServer, id: string, secret: string) =>
    fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${id}:${encodeURIComponent(secret)}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });

  it('serves the client from memory while nothing changed, and sees changes of another process at once', async () => {
    const { data: c } = await adminApi(a.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'shared', grant_types: ['client_credentials'] },
    });
    const secret = c.client_secret!;
    await eventually(async () => (await tokenAt(b, 'shared', secret)).status === 200);
    await eventually(async () => b.container.changes.live()); // listening (it starts on first use)
    expect((await tokenAt(b, 'shared', secret)).status).toBe(200); // now kept
    // With the notification switched off, a change behind the cache's back is not seen: from memory.
    await a.container.pool.query('alter table oauth2_clients disable trigger oauth2_clients_notify_change');
    try {
      await a.container.pool.query("update oauth2_clients set grant_types = '[]' where id = 'shared'");
      for (let i = 0; i < 3; i++) expect((await tokenAt(b, 'shared', secret)).status).toBe(200);
    } finally {
      await a.container.pool.query('alter table oauth2_clients enable trigger oauth2_clients_notify_change');
    }
    // A secret set through the other process's admin API: notified, the old secret stops working.
    const put = await call(a.adminUrl, 'PUT', '/admin/clients/shared', {
      client_secret: 'a brand new chosen secret',
      grant_types: ['client_credentials'],
    });
    expect(put.status).toBe(200);
    await eventually(async () => (await tokenAt(b, 'shared', secret)).status === 401);
    expect((await tokenAt(b, 'shared', 'a brand new chosen secret')).status).toBe(200);
    // Deleted in the other process: unknown here too.
    expect((await call(a.adminUrl, 'DELETE', '/admin/clients/shared')).status).toBe(204);
    await eventually(async () => (await tokenAt(b, 'shared', 'a brand new chosen secret')).status === 401);
  });
});
