import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { call, oidcApi } from '../../helpers/clients.ts';

const UNAUTHORIZED = {
  error: 'The request could not be authorized',
  error_description: 'The requested OAuth 2.0 client does not exist or you provided incorrect credentials.',
};
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe('dynamic client registration, disabled (the default)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('answers all four routes with Hydra’s 404 body', async () => {
    const { body: admin } = await call(s.adminUrl, 'POST', '/admin/clients', {});
    for (const [method, path, body] of [
      ['POST', '/oauth2/register', { client_name: 'x' }],
      ['GET', `/oauth2/register/${admin.client_id}`, undefined],
      ['PUT', `/oauth2/register/${admin.client_id}`, {}],
      ['DELETE', `/oauth2/register/${admin.client_id}`, undefined],
    ] as const) {
      const r = await call(s.publicUrl, method, path, body, bearer(admin.registration_access_token));
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toEqual({
        error: 'The requested resource could not be found',
        error_description: 'Dynamic registration is not enabled.',
      });
    }
    expect((await call(s.adminUrl, 'GET', `/admin/clients/${admin.client_id}`)).status).toBe(200);
  });
});

describe('dynamic client registration, enabled', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ overrides: { 'oidc.dynamic_client_registration.enabled': true } });
  });
  afterAll(async () => s?.close());

  it('registers, reads, updates with token rotation and deletes a client (SDK round trip)', async () => {
    const api = oidcApi(s.publicUrl);
    const created = await api.createOidcDynamicClient({
      oAuth2Client: { client_id: 'chosen-id', client_name: 'rp', redirect_uris: ['https://rp.example.com/cb'] },
    });
    expect(created.status).toBe(201);
    const c = created.data;
    expect(c.client_id).not.toBe('chosen-id');
    expect(c.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.headers.location).toBe(`admin/clients/${c.client_id}`);
    expect(c.client_secret).toMatch(/^[A-Za-z0-9_.~-]{26}$/);
    expect(c.registration_access_token).toMatch(/^ory_at_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(c.registration_client_uri).toBe(`${s.publicUrl}/oauth2/register/${c.client_id}`);
    expect(c.metadata).toEqual({});

    const token1 = c.registration_access_token!;
    const got = await call(s.publicUrl, 'GET', `/oauth2/register/${c.client_id}`, undefined, bearer(token1));
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ client_id: c.client_id, client_name: 'rp' });
    expect(got.body).not.toHaveProperty('client_secret');
    expect(got.body).not.toHaveProperty('metadata');

    const put = await call(
      s.publicUrl,
      'PUT',
      `/oauth2/register/${c.client_id}`,
      { client_id: 'other', client_name: 'rp2', redirect_uris: ['https://rp.example.com/cb'] },
      bearer(token1),
    );
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ client_id: c.client_id, client_name: 'rp2' });
    expect(put.body).not.toHaveProperty('client_secret');
    const token2 = put.body.registration_access_token as string;
    expect(token2).toMatch(/^ory_at_/);
    expect(token2).not.toBe(token1);
    // The old token stopped working; the new one works; the secret was kept.
    expect((await call(s.publicUrl, 'GET', `/oauth2/register/${c.client_id}`, undefined, bearer(token1))).body).toEqual(
      UNAUTHORIZED,
    );
    expect((await call(s.publicUrl, 'GET', `/oauth2/register/${c.client_id}`, undefined, bearer(token2))).status).toBe(
      200,
    );
    expect(await s.container.oauth2.clients.authenticateClient(c.client_id!, c.client_secret!)).toBeDefined();

    const del = await call(s.publicUrl, 'DELETE', `/oauth2/register/${c.client_id}`, undefined, bearer(token2));
    expect(del.status).toBe(204);
    expect((await call(s.adminUrl, 'GET', `/admin/clients/${c.client_id}`)).status).toBe(404);
  });

  it('refuses fields a self-registering client may not choose', async () => {
    const cases: Array<[Record<string, unknown>, number, Record<string, string>]> = [
      [
        { client_secret: 'my-own-secret' },
        400,
        {
          error: 'The request was malformed or contained invalid parameters',
          error_description: 'It is not allowed to choose your own OAuth2 Client secret.',
        },
      ],
      [{ metadata: { a: 1 } }, 400, { error: 'invalid_client_metadata' }],
      [
        { access_token_strategy: 'jwt' },
        400,
        {
          error: 'The request was malformed or contained invalid parameters',
          error_description: 'It is not allowed to choose your own access token strategy.',
        },
      ],
      [
        { skip_consent: true },
        400,
        { error: 'invalid_request', error_description: "'skip_consent' cannot be set for dynamic client registration" },
      ],
      [
        { skip_logout_consent: true },
        400,
        {
          error: 'invalid_request',
          error_description: "'skip_logout_consent' cannot be set for dynamic client registration",
        },
      ],
      [{ policy_uri: 'javascript:alert(1)' }, 400, { error: 'invalid_client_metadata' }],
    ];
    for (const [body, status, expected] of cases) {
      const r = await call(s.publicUrl, 'POST', '/oauth2/register', body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body, JSON.stringify(body)).toMatchObject(expected);
    }
    const meta = await call(s.publicUrl, 'POST', '/oauth2/register', { metadata: { a: 1 } });
    expect(meta.body.error_description).toMatch(/'metadata' cannot be set for dynamic client registration$/);
  });

  it('gives a public client no secret', async () => {
    const r = await call(s.publicUrl, 'POST', '/oauth2/register', { token_endpoint_auth_method: 'none' });
    expect(r.status).toBe(201);
    expect(r.body).not.toHaveProperty('client_secret');
    expect(r.body.registration_access_token).toMatch(/^ory_at_/);
  });

  it('answers a missing, wrong or foreign token and an unknown id with 401', async () => {
    const a = (await call(s.publicUrl, 'POST', '/oauth2/register', {})).body;
    const b = (await call(s.publicUrl, 'POST', '/oauth2/register', {})).body;
    const forged = `ory_at_${'A'.repeat(43)}.${'B'.repeat(43)}`;
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const body = method === 'PUT' ? {} : undefined;
      for (const headers of [
        {},
        bearer(forged),
        bearer(b.registration_access_token),
        { authorization: 'Basic eDp5' },
      ]) {
        const r = await call(s.publicUrl, method, `/oauth2/register/${a.client_id}`, body, headers);
        expect(r.status, `${method} ${JSON.stringify(headers)}`).toBe(401);
        expect(r.body).toEqual(UNAUTHORIZED);
      }
      const unknown = await call(
        s.publicUrl,
        method,
        '/oauth2/register/nope',
        body,
        bearer(a.registration_access_token),
      );
      expect(unknown.status).toBe(401);
    }
    // A malformed body does not get past the token check.
    const garbled = await call(s.publicUrl, 'PUT', `/oauth2/register/${a.client_id}`, { redirect_uris: 5 });
    expect(garbled.status).toBe(401);
    expect((await call(s.adminUrl, 'GET', `/admin/clients/${a.client_id}`)).status).toBe(200);
  });

  it('refuses a secret on PUT with 403 and keeps the token valid', async () => {
    const c = (await call(s.publicUrl, 'POST', '/oauth2/register', {})).body;
    const r = await call(
      s.publicUrl,
      'PUT',
      `/oauth2/register/${c.client_id}`,
      { client_secret: 'chosen-secret' },
      bearer(c.registration_access_token),
    );
    expect(r.status).toBe(403);
    expect(r.body).toEqual({
      error: 'The requested action was forbidden',
      error_description: 'It is not allowed to choose your own OAuth2 Client secret.',
    });
    const again = await call(
      s.publicUrl,
      'GET',
      `/oauth2/register/${c.client_id}`,
      undefined,
      bearer(c.registration_access_token),
    );
    expect(again.status).toBe(200);
  });

  it('lets an admin-created client be managed with the registration token it was given', async () => {
    const c = (await call(s.adminUrl, 'POST', '/admin/clients', { client_name: 'by-admin', metadata: { x: 1 } })).body;
    const r = await call(
      s.publicUrl,
      'GET',
      `/oauth2/register/${c.client_id}`,
      undefined,
      bearer(c.registration_access_token),
    );
    expect(r.status).toBe(200);
    expect(r.body).not.toHaveProperty('metadata');
    await call(s.adminUrl, 'PUT', `/admin/clients/${c.client_id}`, { client_name: 'renamed' });
    const after = await call(
      s.publicUrl,
      'GET',
      `/oauth2/register/${c.client_id}`,
      undefined,
      bearer(c.registration_access_token),
    );
    expect(after.body.client_name).toBe('renamed');
  });
});
