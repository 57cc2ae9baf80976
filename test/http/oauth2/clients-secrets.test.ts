import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySecret } from '../../../src/core/crypto/hash.ts';
import { LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { adminApi, call } from '../../helpers/clients.ts';

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

  it('returns a generated secret once, never on GET or list, and stores only a PBKDF2 hash', async () => {
    const api = adminApi(s.adminUrl);
    const { data: c } = await api.createOAuth2Client({ oAuth2Client: { client_name: 'secretive' } });
    const secret = c.client_secret!;
    expect(secret).toMatch(/^[A-Za-z0-9_.~-]{26}$/);
    const got = await call(s.adminUrl, 'GET', `/admin/clients/${c.client_id}`);
    expect(got.body).not.toHaveProperty('client_secret');
    const list = await call(s.adminUrl, 'GET', '/admin/clients');
    expect(list.body.find((x: any) => x.client_id === c.client_id)).not.toHaveProperty('client_secret');
    expect(JSON.stringify(list.body)).not.toContain(secret);
    const stored = await row(s, c.client_id!);
    expect(stored.client_secret_hash).toMatch(/^\$pbkdf2-sha256\$i=25000,l=32\$/);
    expect(stored.client_secret_hash).not.toContain(secret);
    expect(await verifySecret(secret, stored.client_secret_hash!)).toBe(true);
    // The registration access token is kept as its signature only.
    expect(c.registration_access_token!.endsWith(stored.registration_access_token_signature)).toBe(true);
    expect(stored.registration_access_token_signature).not.toContain('ory_at_');
  });

  it('keeps a chosen secret hashed, and authenticateClient checks id+secret', async () => {
    const { data: c } = await adminApi(s.adminUrl).createOAuth2Client({
      oAuth2Client: { client_id: 'auth-me', client_secret: 'correct horse battery staple' },
    });
    expect(c.client_secret).toBe('correct horse battery staple');
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

describe('client secrets with oauth2.hashers.algorithm = bcrypt', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ overrides: { 'oauth2.hashers.algorithm': 'bcrypt', 'oauth2.hashers.bcrypt.cost': 4 } });
  });
  afterAll(async () => s?.close());

  it('stores a bcrypt hash with the configured cost and verifies against it', async () => {
    const { data: c } = await adminApi(s.adminUrl).createOAuth2Client({ oAuth2Client: { client_id: 'bc' } });
    const hash = (await row(s, 'bc')).client_secret_hash!;
    expect(hash).toMatch(/^\$2[aby]\$04\$/);
    expect(await s.container.oauth2.clients.authenticateClient('bc', c.client_secret!)).toBeDefined();
    expect(await s.container.oauth2.clients.authenticateClient('bc', 'wrong-secret')).toBeUndefined();
  });
});
