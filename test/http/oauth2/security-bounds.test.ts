/**
 * Bounds an anonymous or browser caller cannot get around, through real HTTP on real PostgreSQL:
 * dynamic registration (RFC 7591 §2, §5; RFC 7592 §2.2) cannot choose token lifespans, nor scope or
 * audience outside `oidc.dynamic_client_registration.allowed_*` (the admin API can); PKCE `plain`
 * is refused and not advertised unless `oauth2.pkce.allow_plain` (RFC 7636 §4.2, §7.2; Hydra 26);
 * wrong device user codes are limited per browser address as well as per challenge (RFC 8628 §5.1).
 */

import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { LIFESPAN_FIELDS } from '../../../src/oauth2/clients/model.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { call, oidcApi } from '../../helpers/clients.ts';
import {
  authorizeUrl,
  Browser,
  CB,
  type CreatedClient,
  createClient,
  exchangeCode,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';
import { basic } from '../../helpers/tokens.ts';

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const TEN_YEARS = '87600h';

describe('dynamic client registration is bounded by configuration', () => {
  let s: TestServer;
  let bounded: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ overrides: { 'oidc.dynamic_client_registration.enabled': true } });
    bounded = await startTestServer({
      overrides: {
        'oidc.dynamic_client_registration.enabled': true,
        'oidc.dynamic_client_registration.allowed_scope': ['openid', 'photos.read'],
        'oidc.dynamic_client_registration.allowed_audience': ['https://api.example.com'],
      },
    });
  });
  afterAll(async () => {
    await bounded?.close();
    await s?.close();
  });

  it('refuses a 10-year client_credentials lifespan (and every other lifespan) with invalid_client_metadata', async () => {
    const r = await call(s.publicUrl, 'POST', '/oauth2/register', {
      grant_types: ['client_credentials'],
      client_credentials_grant_access_token_lifespan: TEN_YEARS,
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_client_metadata');
    expect(r.body.error_description).toContain(
      "'client_credentials_grant_access_token_lifespan' cannot be set for dynamic client registration",
    );
    for (const f of LIFESPAN_FIELDS) {
      const one = await call(s.publicUrl, 'POST', '/oauth2/register', { [f]: '1h' });
      expect([one.status, one.body.error], f).toEqual([400, 'invalid_client_metadata']);
    }
    // Through the Hydra SDK as well; `null` lifespans (the server's) are fine.
    const sdk = await oidcApi(s.publicUrl)
      .createOidcDynamicClient({ oAuth2Client: { client_credentials_grant_access_token_lifespan: TEN_YEARS } })
      .catch((e: { response?: { status: number } }) => e.response);
    expect(sdk?.status).toBe(400);
    const nulls = await call(s.publicUrl, 'POST', '/oauth2/register', {
      client_credentials_grant_access_token_lifespan: null,
    });
    expect(nulls.status).toBe(201);
    expect(nulls.body.client_credentials_grant_access_token_lifespan).toBeNull();
  });

  it('refuses lifespans on RFC 7592 PUT, except the ones the operator set, sent back unchanged', async () => {
    const c = (await call(s.publicUrl, 'POST', '/oauth2/register', {})).body;
    const put = await call(
      s.publicUrl,
      'PUT',
      `/oauth2/register/${c.client_id}`,
      { client_credentials_grant_access_token_lifespan: TEN_YEARS },
      bearer(c.registration_access_token),
    );
    expect([put.status, put.body.error]).toEqual([400, 'invalid_client_metadata']);

    const admin = (
      await call(s.adminUrl, 'POST', '/admin/clients', {
        grant_types: ['client_credentials'],
        client_credentials_grant_access_token_lifespan: '2h',
      })
    ).body;
    const got = await call(
      s.publicUrl,
      'GET',
      `/oauth2/register/${admin.client_id}`,
      undefined,
      bearer(admin.registration_access_token),
    );
    expect(got.body.client_credentials_grant_access_token_lifespan).toBe('2h0m0s');
    const roundTrip = await call(
      s.publicUrl,
      'PUT',
      `/oauth2/register/${admin.client_id}`,
      got.body,
      bearer(admin.registration_access_token),
    );
    expect(roundTrip.status).toBe(200);
    expect(roundTrip.body.client_credentials_grant_access_token_lifespan).toBe('2h0m0s');
    const longer = await call(
      s.publicUrl,
      'PUT',
      `/oauth2/register/${admin.client_id}`,
      { ...got.body, client_credentials_grant_access_token_lifespan: TEN_YEARS },
      bearer(roundTrip.body.registration_access_token),
    );
    expect([longer.status, longer.body.error]).toEqual([400, 'invalid_client_metadata']);
  });

  it('keeps scope within allowed_scope (default: default_scope) and audience within allowed_audience (default: none)', async () => {
    const ok = await call(s.publicUrl, 'POST', '/oauth2/register', { scope: 'openid offline' });
    expect([ok.status, ok.body.scope]).toEqual([201, 'openid offline']);
    const omitted = await call(s.publicUrl, 'POST', '/oauth2/register', {});
    expect(omitted.body.scope).toBe('offline_access offline openid');
    const wide = await call(s.publicUrl, 'POST', '/oauth2/register', { scope: 'openid admin' });
    expect([wide.status, wide.body.error]).toEqual([400, 'invalid_client_metadata']);
    expect(wide.body.error_description).toContain("Scope 'admin' is not allowed for dynamically registered clients.");
    const aud = await call(s.publicUrl, 'POST', '/oauth2/register', { audience: ['https://api.example.com'] });
    expect([aud.status, aud.body.error]).toEqual([400, 'invalid_client_metadata']);
    expect(aud.body.error_description).toContain("Audience 'https://api.example.com' is not allowed");

    const b = await call(bounded.publicUrl, 'POST', '/oauth2/register', {
      scope: 'openid photos.read',
      audience: ['https://api.example.com'],
    });
    expect(b.status).toBe(201);
    expect(b.body).toMatchObject({ scope: 'openid photos.read', audience: ['https://api.example.com'] });
    for (const body of [{ scope: 'openid offline' }, { scope: 'photos.*' }, { audience: ['https://other.example'] }]) {
      const r = await call(bounded.publicUrl, 'POST', '/oauth2/register', body);
      expect([r.status, r.body.error], JSON.stringify(body)).toEqual([400, 'invalid_client_metadata']);
    }
    const put = await call(
      bounded.publicUrl,
      'PUT',
      `/oauth2/register/${b.body.client_id}`,
      { scope: 'openid photos.write' },
      bearer(b.body.registration_access_token),
    );
    expect([put.status, put.body.error]).toEqual([400, 'invalid_client_metadata']);
  });

  it('leaves the admin API unbounded (a trusted operator)', async () => {
    const r = await call(s.adminUrl, 'POST', '/admin/clients', {
      scope: 'openid admin',
      audience: ['https://api.example.com'],
      client_credentials_grant_access_token_lifespan: TEN_YEARS,
    });
    expect(r.status).toBe(201);
    expect(r.body.client_credentials_grant_access_token_lifespan).toBe('87600h0m0s');
  });
});

describe('PKCE plain', () => {
  let strict: TestServer;
  let lax: TestServer;
  let a: CreatedClient;
  let b: CreatedClient;
  beforeAll(async () => {
    strict = await startTestServer();
    lax = await startTestServer({ overrides: { 'oauth2.pkce.allow_plain': true } });
    a = await createClient(strict);
    b = await createClient(lax);
  });
  afterAll(async () => {
    await lax?.close();
    await strict?.close();
  });

  const start = (t: TestServer, c: CreatedClient, pkce: Record<string, string>) =>
    new Browser().get(
      authorizeUrl(t, {
        client_id: c.client_id,
        response_type: 'code',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
        ...pkce,
      }),
    );
  const discovered = async (t: TestServer) =>
    ((await (await fetch(`${t.publicUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>)
      .code_challenge_methods_supported;

  it('is refused at the authorization endpoint by default with fosite’s error, as is a challenge without a method', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const cases: Array<Record<string, string>> = [
      { code_challenge: verifier, code_challenge_method: 'plain' },
      { code_challenge: verifier },
    ];
    for (const pkce of cases) {
      const r = await start(strict, a, pkce);
      expect(r.location.startsWith(CB), JSON.stringify(pkce)).toBe(true);
      expect(param(r.location, 'error')).toBe('invalid_request');
      expect(param(r.location, 'error_description')).toContain(
        'Clients must use code_challenge_method=S256, plain is not allowed.',
      );
      expect(param(r.location, 'code')).toBeNull();
    }
    const s256 = createHash('sha256').update(verifier).digest('base64url');
    const ok = await start(strict, a, { code_challenge: s256, code_challenge_method: 'S256' });
    expect(param(ok.location, 'login_challenge')).toBeTruthy();
  });

  it('is advertised only with allow_plain: discovery lists S256 alone by default', async () => {
    expect(await discovered(strict)).toEqual(['S256']);
    expect(await discovered(lax)).toEqual(['plain', 'S256']);
  });

  it('is accepted end to end with oauth2.pkce.allow_plain', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const flow = await runFlow(
      lax,
      new Browser(),
      authorizeUrl(lax, {
        client_id: b.client_id,
        response_type: 'code',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
        code_challenge: verifier,
        code_challenge_method: 'plain',
      }),
    );
    const code = param(flow.final, 'code') as string;
    expect(code).toMatch(/^ory_ac_/);
    const tokens = await exchangeCode(lax, b, code, { code_verifier: verifier });
    expect([tokens.status, tokens.body.token_type]).toEqual([200, 'bearer']);
  });
});

/** One browser request to `url` from a given local address (the loopback net is all ours). */
function getFrom(
  localAddress: string,
  url: string,
): Promise<{ status: number; location: string; body: string; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          location: String(res.headers.location ?? ''),
          body,
          retryAfter: res.headers['retry-after'] as string | undefined,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('wrong device user codes per browser address', () => {
  const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
  const clock = manualClock(new Date('2030-01-01T00:00:10Z'));
  let t: TestServer;
  let client: CreatedClient;
  beforeAll(async () => {
    t = await startTestServer({
      clock,
      overrides: {
        'rate_limit.failed_auth.per_address_user_codes': 6,
        'rate_limit.failed_auth.window': '1m',
      },
    });
    client = await createClient(t, { grant_types: [DEVICE], response_types: ['code'], scope: 'openid' });
  });
  afterAll(() => t?.close());

  const userCode = async () => {
    const res = await fetch(`${t.publicUrl}/oauth2/device/auth`, {
      method: 'POST',
      headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: client.client_id, scope: 'openid' }),
    });
    return ((await res.json()) as { user_code: string }).user_code;
  };
  /** A device challenge as the browser at `address` gets it from `/oauth2/device/verify`. */
  const challengeFor = async (address: string) => {
    const r = await getFrom(address, `${t.publicUrl}/oauth2/device/verify`);
    expect(r.status, r.body).toBe(302);
    return param(r.location, 'device_challenge') as string;
  };
  /** The verification UI's call (from its own address, the same for every browser here). */
  const accept = async (challenge: string, code: string) => {
    const res = await fetch(
      `${t.adminUrl}/admin/oauth2/auth/requests/device/accept?device_challenge=${encodeURIComponent(challenge)}`,
      { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user_code: code }) },
    );
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as Record<string, string>,
    };
  };

  it('refuses an address with 429 + Retry-After after per_address_user_codes wrong codes, across its challenges', async () => {
    const first = await challengeFor('127.0.0.1');
    for (let i = 0; i < 5; i++) expect((await accept(first, `wrong-${i}`)).status).toBe(400);
    // The per-challenge limit holds as before.
    expect((await accept(first, 'wrong-5')).body.error).toBe('request_forbidden');
    // A fresh challenge is free, but counts against the same address: its 6th wrong code is the last.
    const second = await challengeFor('127.0.0.1');
    expect((await accept(second, 'wrong-6')).status).toBe(400);
    const right = await userCode();
    const refused = await accept(second, right);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'too_many_requests',
      error_description: 'Too many failed authentication attempts, try again later.',
    });
    expect(refused.retryAfter).toBe('50');
    // The address gets no new challenge either.
    const again = await getFrom('127.0.0.1', `${t.publicUrl}/oauth2/device/verify`);
    expect(again.status).toBe(429);
    expect(again.retryAfter).toBe('50');

    // Another browser's address is not affected, although the UI calls from the same address.
    const other = await challengeFor('127.0.0.2');
    expect((await accept(other, right)).status).toBe(200);

    // The window ends: the first address may try again.
    clock.advance(50_000);
    const later = await challengeFor('127.0.0.1');
    expect((await accept(later, await userCode())).status).toBe(200);
  });
});
