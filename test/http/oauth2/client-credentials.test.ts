/** The client_credentials grant (RFC 6749 §4.4; after Hydra's cypress oauth2/client_creds). */
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { introspect, tokenRequest } from '../../helpers/tokens.ts';

const machine = (extra: Record<string, unknown> = {}) => ({
  grant_types: ['client_credentials', 'refresh_token'],
  response_types: ['token'],
  scope: 'read write offline openid api.*',
  audience: ['https://api.example.com'],
  ...extra,
});

describe('client_credentials', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('issues an access token only (no refresh or ID token, even with offline openid), with sub = client id', async () => {
    const client = await createClient(t, machine());
    const r = await tokenRequest(t, client, {
      grant_type: 'client_credentials',
      scope: 'read offline openid api.orders',
      audience: 'https://api.example.com/orders',
    });
    expect(r.status).toBe(200);
    expect(r.res.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    expect(r.body).toMatchObject({ token_type: 'bearer', scope: 'read offline openid api.orders', expires_in: 3600 });
    const info = await introspect(t, r.body.access_token);
    expect(info.body).toMatchObject({
      active: true,
      sub: client.client_id,
      client_id: client.client_id,
      aud: ['https://api.example.com/orders'],
      token_use: 'access_token',
    });
  });

  it('grants nothing when no scope is asked for (default_grant_allowed_scope off)', async () => {
    const client = await createClient(t, machine());
    const r = await tokenRequest(t, client, { grant_type: 'client_credentials' });
    expect([r.status, r.body.scope]).toEqual([200, '']);
  });

  it('refuses scopes and audiences the client may not request', async () => {
    const client = await createClient(t, machine());
    const scope = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read admin' });
    expect([scope.status, scope.body.error]).toEqual([400, 'invalid_scope']);
    expect(scope.body.error_description).toContain("not allowed to request scope 'admin'");
    const aud = await tokenRequest(t, client, {
      grant_type: 'client_credentials',
      audience: ['https://api.example.com', 'https://evil.example.com'],
    });
    expect([aud.status, aud.body.error]).toEqual([400, 'invalid_request']);
    expect(aud.body.error_description).toContain("'https://evil.example.com' has not been whitelisted");
  });

  it('refuses public clients (invalid_grant) and clients without the grant type (unauthorized_client)', async () => {
    const pub = await createClient(t, machine({ token_endpoint_auth_method: 'none' }));
    const r = await tokenRequest(t, pub, { grant_type: 'client_credentials' });
    expect([r.status, r.body.error]).toEqual([400, 'invalid_grant']);
    const noGrant = await createClient(t, machine({ grant_types: ['authorization_code'] }));
    const u = await tokenRequest(t, noGrant, { grant_type: 'client_credentials' });
    expect([u.status, u.body.error]).toEqual([400, 'unauthorized_client']);
    const anonymous = await tokenRequest(t, undefined, { grant_type: 'client_credentials' });
    expect([anonymous.status, anonymous.body.error]).toEqual([400, 'invalid_request']);
  });

  it('issues JWT access tokens for jwt clients, verifiable with the published keys', async () => {
    const client = await createClient(t, machine({ access_token_strategy: 'jwt' }));
    const r = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    const jwks = createLocalJWKSet((await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as never);
    const { payload } = await jwtVerify(r.body.access_token, jwks);
    expect(payload).toMatchObject({ sub: client.client_id, client_id: client.client_id, scp: ['read'], aud: [] });
  });
});

describe('client_credentials with oauth2.client_credentials.default_grant_allowed_scope', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'oauth2.client_credentials.default_grant_allowed_scope': true } });
  });
  afterAll(() => t?.close());

  it('grants every client scope when none is requested, and only the requested ones otherwise', async () => {
    const client = await createClient(t, machine());
    const all = await tokenRequest(t, client, { grant_type: 'client_credentials' });
    expect(all.body.scope).toBe('read write offline openid api.*');
    const some = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'write' });
    expect(some.body.scope).toBe('write');
  });
});
