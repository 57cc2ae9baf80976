import type { OAuth2Api } from '@ory/hydra-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { adminApi, call, parseLink } from '../../helpers/clients.ts';

const LIFESPAN_KEYS = [
  'authorization_code_grant_access_token_lifespan',
  'authorization_code_grant_id_token_lifespan',
  'authorization_code_grant_refresh_token_lifespan',
  'client_credentials_grant_access_token_lifespan',
  'implicit_grant_access_token_lifespan',
  'implicit_grant_id_token_lifespan',
  'jwt_bearer_grant_access_token_lifespan',
  'refresh_token_grant_id_token_lifespan',
  'refresh_token_grant_access_token_lifespan',
  'refresh_token_grant_refresh_token_lifespan',
  'device_authorization_grant_id_token_lifespan',
  'device_authorization_grant_access_token_lifespan',
  'device_authorization_grant_refresh_token_lifespan',
];

describe('admin API: OAuth 2.0 clients through @ory/hydra-client', () => {
  let s: TestServer;
  let api: OAuth2Api;
  beforeAll(async () => {
    s = await startTestServer();
    api = adminApi(s.adminUrl);
  });
  afterAll(async () => s?.close());

  it('creates a client with Hydra’s defaults, a generated secret and a registration token', async () => {
    const r = await api.createOAuth2Client({
      oAuth2Client: { redirect_uris: ['http://localhost:3000/cb'], metadata: { foo: 'bar' } },
    });
    expect(r.status).toBe(201);
    const c = r.data as Record<string, unknown>;
    expect(r.headers.location).toBe(`/admin/clients/${c.client_id}`);
    expect(c.client_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(c.client_secret).toMatch(/^[A-Za-z0-9_.~-]{26}$/);
    expect(c.registration_access_token).toMatch(/^ory_at_/);
    expect(c.registration_client_uri).toBe(`${s.publicUrl}/oauth2/register/${c.client_id}`);
    expect(c.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(c.updated_at).toBe(c.created_at);
    const {
      client_id,
      client_secret,
      registration_access_token,
      registration_client_uri,
      created_at,
      updated_at,
      ...rest
    } = c;
    expect(rest).toEqual({
      client_name: '',
      redirect_uris: ['http://localhost:3000/cb'],
      grant_types: null,
      response_types: null,
      scope: 'offline_access offline openid',
      audience: [],
      owner: '',
      policy_uri: '',
      allowed_cors_origins: [],
      tos_uri: '',
      client_uri: '',
      logo_uri: '',
      contacts: null,
      client_secret_expires_at: 0,
      subject_type: 'public',
      jwks: {},
      token_endpoint_auth_method: 'client_secret_basic',
      userinfo_signed_response_alg: 'none',
      metadata: { foo: 'bar' },
      skip_consent: false,
      skip_logout_consent: null,
      ...Object.fromEntries(LIFESPAN_KEYS.map((k) => [k, null])),
    });
    // Key order follows Hydra's struct.
    expect(Object.keys(c).slice(0, 4)).toEqual(['client_id', 'client_name', 'client_secret', 'redirect_uris']);
  });

  it('reads a client back without its secret, with [] for lists that were not given', async () => {
    const { data: created } = await api.createOAuth2Client({ oAuth2Client: { client_name: 'reader' } });
    const { data } = await api.getOAuth2Client({ id: created.client_id! });
    const c = data as Record<string, unknown>;
    expect(c.client_secret).toBeUndefined();
    expect(c.registration_access_token).toBeUndefined();
    expect(c).toMatchObject({ client_name: 'reader', grant_types: [], response_types: [], contacts: [], metadata: {} });
    expect(c.created_at).toBe(created.created_at);
  });

  it('keeps every field it is given', async () => {
    const full = {
      client_id: 'full-client',
      client_name: 'Full',
      client_secret: 'a-long-enough-secret',
      redirect_uris: ['https://app.example.com/cb', 'com.example.app:/cb'],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      response_types: ['code', 'code id_token'],
      scope: 'openid offline_access profile',
      audience: ['https://api.example.com'],
      owner: 'team-a',
      policy_uri: 'https://example.com/policy',
      tos_uri: 'http://example.com/tos',
      client_uri: 'https://example.com',
      logo_uri: 'https://example.com/logo.png',
      contacts: ['ops@example.com'],
      allowed_cors_origins: ['https://app.example.com/'],
      subject_type: 'public',
      jwks_uri: 'https://app.example.com/jwks.json',
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      request_uris: ['https://app.example.com/request'],
      request_object_signing_alg: 'RS256',
      userinfo_signed_response_alg: 'RS256',
      frontchannel_logout_uri: 'https://app.example.com/fc',
      frontchannel_logout_session_required: true,
      backchannel_logout_uri: 'https://app.example.com/bc',
      backchannel_logout_session_required: true,
      post_logout_redirect_uris: ['https://app.example.com/bye'],
      metadata: { tier: 'gold', n: 1 },
      access_token_strategy: 'jwt',
      skip_consent: true,
      skip_logout_consent: true,
      client_credentials_grant_access_token_lifespan: '30m',
    };
    const { data: created } = await api.createOAuth2Client({ oAuth2Client: full });
    const { data } = await api.getOAuth2Client({ id: 'full-client' });
    const { client_secret, allowed_cors_origins, client_credentials_grant_access_token_lifespan, ...rest } = full;
    expect(created.client_secret).toBe(client_secret);
    expect(data).toMatchObject({
      ...rest,
      allowed_cors_origins: ['https://app.example.com'],
      client_credentials_grant_access_token_lifespan: '30m0s',
    });
  });

  it('pages the list by id with page_size and follows the Link header to the end', async () => {
    const owner = `pager-${Date.now()}`;
    const ids = ['p-05', 'p-01', 'p-04', 'p-02', 'p-03'];
    for (const id of ids) await api.createOAuth2Client({ oAuth2Client: { client_id: id, owner } });
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    for (;;) {
      const r = await api.listOAuth2Clients({ pageSize: 2, owner, ...(token ? { pageToken: token } : {}) });
      pages++;
      seen.push(...r.data.map((c) => c.client_id!));
      for (const c of r.data) expect(c.client_secret).toBeUndefined();
      const links = parseLink(r.headers.link);
      expect(links.first).toMatch(/^\/admin\/clients\?owner=pager-\d+&page_size=2&page_token=[^&]+$/);
      if (!links.next) break;
      expect(links.next).toMatch(/^\/admin\/clients\?owner=pager-\d+&page_size=2&page_token=[^&]+$/);
      token = new URL(links.next, s.adminUrl).searchParams.get('page_token')!;
      expect(pages).toBeLessThan(10);
    }
    expect(seen).toEqual([...ids].sort());
    expect(pages).toBe(3);
  });

  it('follows the relative Link URLs as they are, and the first link starts over', async () => {
    const owner = `linker-${Date.now()}`;
    for (const id of ['l-1', 'l-2', 'l-3']) await api.createOAuth2Client({ oAuth2Client: { client_id: id, owner } });
    const p1 = await call(s.adminUrl, 'GET', `/admin/clients?owner=${owner}&page_size=2`);
    const links = parseLink(p1.headers.get('link'));
    const p2 = await call(s.adminUrl, 'GET', links.next!);
    expect(p2.body.map((c: { client_id: string }) => c.client_id)).toEqual(['l-3']);
    expect(parseLink(p2.headers.get('link')).next).toBeUndefined();
    const again = await call(s.adminUrl, 'GET', parseLink(p2.headers.get('link')).first!);
    expect(again.body.map((c: { client_id: string }) => c.client_id)).toEqual(['l-1', 'l-2']);
  });

  it('filters by client_name and owner (exact match), defaults to 100 per page and clamps page_size to 500', async () => {
    await api.createOAuth2Client({ oAuth2Client: { client_name: 'Needle', owner: 'o-filter' } });
    await api.createOAuth2Client({ oAuth2Client: { client_name: 'needle', owner: 'o-filter' } });
    const byName = await api.listOAuth2Clients({ clientName: 'Needle' });
    expect(byName.data.map((c) => c.client_name)).toEqual(['Needle']);
    const byOwner = await api.listOAuth2Clients({ owner: 'o-filter' });
    expect(byOwner.data).toHaveLength(2);
    const all = await call(s.adminUrl, 'GET', '/admin/clients');
    expect(parseLink(all.headers.get('link')).first).toContain('page_size=100');
    const big = await call(s.adminUrl, 'GET', '/admin/clients?page_size=100000');
    expect(parseLink(big.headers.get('link')).first).toContain('page_size=500');
    expect((await call(s.adminUrl, 'GET', '/clients?owner=nobody-at-all')).body).toEqual([]);
  });

  it('replaces a client with PUT: fields left out go back to empty, the secret is kept', async () => {
    const { data: c } = await api.createOAuth2Client({
      oAuth2Client: { client_name: 'before', owner: 'x', contacts: ['a@example.com'] },
    });
    const { data } = await api.setOAuth2Client({
      id: c.client_id!,
      oAuth2Client: { client_name: 'after', redirect_uris: ['https://after.example.com/cb'] },
    });
    expect(data).toMatchObject({ client_id: c.client_id, client_name: 'after', owner: '', contacts: null });
    expect(data.client_secret).toBeUndefined();
    expect(data.created_at).toBe(c.created_at);
    const ok = await s.container.oauth2.clients.authenticateClient(c.client_id!, c.client_secret!);
    expect(ok?.client_name).toBe('after');
  });

  it('patches a client with JSON Patch (replace of a missing path adds it)', async () => {
    const { data: c } = await api.createOAuth2Client({ oAuth2Client: { client_name: 'patch-me' } });
    const { data } = await api.patchOAuth2Client({
      id: c.client_id!,
      jsonPatch: [
        { op: 'replace', path: '/client_name', value: 'patched' },
        { op: 'add', path: '/redirect_uris/-', value: 'https://patched.example.com/cb' },
        { op: 'replace', path: '/metadata/level', value: 3 },
        { op: 'remove', path: '/audience' },
        { op: 'add', path: '/metadata/deep/er', value: true },
      ],
    });
    expect(data).toMatchObject({
      client_name: 'patched',
      redirect_uris: ['https://patched.example.com/cb'],
      metadata: { level: 3, deep: { er: true } },
      audience: [],
    });
    expect(data.client_secret).toBeUndefined();
    expect((await api.getOAuth2Client({ id: c.client_id! })).data.client_name).toBe('patched');
  });

  it('sets the 13 lifespans with /lifespans, omitted ones become null, rendered as Go durations', async () => {
    const { data: c } = await api.createOAuth2Client({
      oAuth2Client: { client_name: 'lifespans', implicit_grant_id_token_lifespan: '2h' },
    });
    const body = Object.fromEntries(LIFESPAN_KEYS.map((k, i) => [k, `${31 + i}h`]));
    delete body.device_authorization_grant_refresh_token_lifespan;
    body.authorization_code_grant_access_token_lifespan = '1.5s';
    body.client_credentials_grant_access_token_lifespan = '500ms';
    const { data } = await api.setOAuth2ClientLifespans({ id: c.client_id!, oAuth2ClientTokenLifespans: body });
    expect(data).toMatchObject({
      client_name: 'lifespans',
      authorization_code_grant_access_token_lifespan: '1.5s',
      authorization_code_grant_id_token_lifespan: '32h0m0s',
      client_credentials_grant_access_token_lifespan: '500ms',
      implicit_grant_id_token_lifespan: '36h0m0s',
      device_authorization_grant_access_token_lifespan: '42h0m0s',
      device_authorization_grant_refresh_token_lifespan: null,
    });
    expect(data.client_secret).toBeUndefined();
    const bad = await call(s.adminUrl, 'PUT', `/admin/clients/${c.client_id}/lifespans`, {
      implicit_grant_access_token_lifespan: '1 day',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('The request was malformed or contained invalid parameters');
  });

  it('deletes a client; then it is gone (404 JSON), and deleting again is 404', async () => {
    const { data: c } = await api.createOAuth2Client({ oAuth2Client: {} });
    const del = await api.deleteOAuth2Client({ id: c.client_id! });
    expect(del.status).toBe(204);
    for (const [method, path] of [
      ['GET', `/admin/clients/${c.client_id}`],
      ['DELETE', `/admin/clients/${c.client_id}`],
      ['PUT', `/admin/clients/${c.client_id}`],
      ['PATCH', `/admin/clients/${c.client_id}`],
      ['PUT', `/admin/clients/${c.client_id}/lifespans`],
      ['GET', '/clients/no-such-client'],
    ] as const) {
      const r = await call(s.adminUrl, method, path, method === 'PATCH' ? [] : method === 'PUT' ? {} : undefined);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      expect(r.body).toEqual({ error: 'Unable to locate the resource', error_description: '' });
    }
  });

  it('refuses a duplicate client id with 409', async () => {
    await api.createOAuth2Client({ oAuth2Client: { client_id: 'dupe' } });
    const r = await call(s.adminUrl, 'POST', '/admin/clients', { client_id: 'dupe' });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({
      error: 'Unable to insert or update resource because a resource with that value exists already',
      error_description: '',
    });
  });
});
