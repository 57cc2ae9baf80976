/**
 * Google Workspace authorization (after Jackson
 * npm/test/dsync/google_oauth.test.ts) against a fake Google on loopback: the authorization URL and
 * its exact parameters, the signed state (tampered, expired, foreign, replayed in another browser),
 * the HTTP authorize and callback routes, the code exchange and setToken.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealJson } from '../../../src/core/crypto/jwe.ts';
import { keyRing } from '../../../src/core/crypto/keys.ts';
import { signState } from '../../../src/dsync/cloud/google/state.ts';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type FakeGoogle, googleConfig, startFakeGoogle } from '../../helpers/fake-google.ts';
import { getManual as get } from '../../helpers/json.ts';

const SCOPES = [
  'https://www.googleapis.com/auth/admin.directory.user.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.readonly',
  'https://www.googleapis.com/auth/admin.directory.group.member.readonly',
].join(' ');

let fake: FakeGoogle;
let s: TestServer;
let google: DirectoryRecord;
const ctl = () => s.container.dsync.controller();
const authorizePath = '/api/scim/oauth/authorize';
const callback = () => `${s.publicUrl}/api/scim/oauth/callback`;

beforeAll(async () => {
  fake = await startFakeGoogle();
  s = await startDsyncServer(googleConfig(fake));
  google = await createDirectory(s, { type: 'google', tenant: 'acme', product: 'crm' });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const tokenCalls = () => fake.requests.filter((r) => r.path === '/token');

/** An authorization link minted through the admin API (the authorize route needs one). */
async function link(directoryId: string, body: Record<string, unknown> = {}): Promise<string> {
  const r = await v1(s)('POST', `/${directoryId}/google/authorization-link`, body);
  if (r.status !== 200) throw new Error(`authorization link: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.url as string;
}

/** The admin's browser: authorize → Google's consent (the fake answers at once) → callback. */
async function browserFlow(directoryId: string, linkBody: Record<string, unknown> = {}) {
  const start = await get(await link(directoryId, linkBody));
  expect(start.status).toBe(302);
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const consent = await get(start.headers.get('location') as string);
  expect(consent.status).toBe(302);
  const back = new URL(consent.headers.get('location') as string);
  return { start, cookie, back };
}

describe('google_authorization_url and the directory record', () => {
  it('is the external URL plus the authorize path, on Google directories only', async () => {
    expect(google.google_authorization_url).toBe(`${s.publicUrl}${authorizePath}`);
    expect(google).toMatchObject({ google_domain: '', google_access_token: '', google_refresh_token: '' });
    const scim = await createDirectory(s, { type: 'okta-scim-v2' });
    expect(scim).not.toHaveProperty('google_authorization_url');
    expect(scim).not.toHaveProperty('google_domain');
  });

  it('accepts google_domain at creation and update', async () => {
    const d = await createDirectory(s, { type: 'google', google_domain: 'acme.test' });
    expect(d.google_domain).toBe('acme.test');
    const r = await v1(s)('PATCH', `/${d.id}`, { google_domain: 'other.test' });
    expect(r.body.data.google_domain).toBe('other.test');
  });
});

describe('generateAuthorizationUrl', () => {
  it('builds Google’s URL with exactly the offline-access parameters, the three scopes and a signed state', async () => {
    const { data, error } = await ctl().google.generateAuthorizationUrl({ directoryId: google.id });
    expect(error).toBeNull();
    const u = new URL(data?.authorizationUrl as string);
    expect(`${u.origin}${u.pathname}`).toBe(fake.authUrl);
    const params = Object.fromEntries(u.searchParams);
    expect(Object.keys(params).sort()).toEqual(
      ['access_type', 'client_id', 'prompt', 'redirect_uri', 'response_type', 'scope', 'state'].sort(),
    );
    expect(params).toMatchObject({
      access_type: 'offline',
      prompt: 'consent',
      response_type: 'code',
      client_id: fake.clientId,
      redirect_uri: callback(),
      scope: SCOPES,
    });
    // Not Jackson's plain JSON: the directory id is not readable in the state.
    expect(params.state).not.toContain(google.id);
    expect(() => JSON.parse(params.state as string)).toThrow();
  });

  it('answers the same under the name cloudDirectory', async () => {
    const { data } = await ctl().cloudDirectory.generateAuthorizationUrl({ directoryId: google.id });
    expect(new URL(data?.authorizationUrl as string).searchParams.get('client_id')).toBe(fake.clientId);
  });

  it('answers Jackson’s errors', async () => {
    const scim = await createDirectory(s, { type: 'okta-scim-v2' });
    expect(await ctl().google.generateAuthorizationUrl({ directoryId: scim.id })).toEqual({
      data: null,
      error: { message: 'Directory is not a Google Directory', code: 400 },
    });
    expect((await ctl().google.generateAuthorizationUrl({ directoryId: crypto.randomUUID() })).error).toEqual({
      message: 'Directory configuration not found.',
      code: 404,
    });
    expect((await ctl().google.generateAuthorizationUrl({ directoryId: '' })).error).toEqual({
      message: 'Missing required parameters.',
      code: 400,
    });
  });
});

describe('GET /api/scim/oauth/authorize (public listener)', () => {
  it('redirects to Google and binds the flow to the browser with a cookie', async () => {
    const r = await get(await link(google.id));
    expect(r.status).toBe(302);
    const to = new URL(r.headers.get('location') as string);
    expect(`${to.origin}${to.pathname}`).toBe(fake.authUrl);
    expect(to.searchParams.get('redirect_uri')).toBe(callback());
    expect(to.searchParams.get('scope')).toBe(SCOPES);
    const cookie = r.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^gatehouse_google_authorization=[\w-]{20,};/);
    expect(cookie).toMatch(/path=\/api\/scim\/oauth\/callback/i);
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/samesite=lax/i);
  });

  it('answers errors as {error: {message}} and other methods with 405', async () => {
    const scim = await createDirectory(s, { type: 'okta-scim-v2' });
    const r = await v1(s)('POST', `/${scim.id}/google/authorization-link`);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: { message: 'Directory is not a Google Directory', code: 400 } });
    expect((await get(`${s.publicUrl}${authorizePath}`)).body.error.message).toBe('Missing required parameters.');
    const post = await fetch(`${s.publicUrl}${authorizePath}?directoryId=${google.id}`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });
});

describe('GET /api/scim/oauth/callback', () => {
  it('completes the admin’s authorization: code exchanged, tokens stored sealed, Jackson’s text', async () => {
    const d = await createDirectory(s, { type: 'google' });
    const before = tokenCalls().length;
    const { cookie, back } = await browserFlow(d.id);
    expect(`${back.origin}${back.pathname}`).toBe(callback());
    const done = await get(back.toString(), { cookie });
    expect(done.status).toBe(200);
    expect(done.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(done.text).toBe('Authorized done successfully. You may close this window.');
    expect(done.headers.get('set-cookie')).toMatch(/^gatehouse_google_authorization=;/);
    // One authorization_code exchange, client_secret_post, with the registered redirect URI.
    const calls = tokenCalls().slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.form).toEqual({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code'),
      redirect_uri: callback(),
      client_id: fake.clientId,
      client_secret: fake.clientSecret,
    });
    expect(calls[0]?.authorization).toBeUndefined();
    const record = (await v1(s)('GET', `/${d.id}`)).body.data;
    expect(record.google_access_token).toBe(fake.accessTokens.at(-1));
    expect(record.google_refresh_token).toBe(fake.refreshTokens.at(-1));
    const { rows } = await sql<{ a: string; r: string; exp: Date }>`
      select google_access_token a, google_refresh_token r, google_access_token_expires_at exp
      from dsync_directories where id = ${d.id}`.execute(s.container.db);
    expect(rows[0]?.a).not.toContain(record.google_access_token);
    expect(rows[0]?.r).not.toContain(record.google_refresh_token);
    expect(Math.abs((rows[0]?.exp.getTime() ?? 0) - (Date.now() + 3599_000))).toBeLessThan(60_000);
  });

  it('refuses a tampered, expired, foreign or missing state with a clear 400, without any exchange', async () => {
    const d = await createDirectory(s, { type: 'google' });
    const { cookie, back } = await browserFlow(d.id);
    const code = back.searchParams.get('code') as string;
    const state = back.searchParams.get('state') as string;
    const ring = keyRing([TEST_SECRET], 'state');
    const tampered = `${state.slice(0, -4)}${state.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const expired = await signState(ring, { directoryId: d.id }, new Date(Date.now() - 11 * 60_000));
    const otherPurpose = await sealJson(ring, 'flow', { d: d.id }, 60_000);
    const otherSecret = await signState(
      keyRing(['another-secret-0123456789abcdef'], 'state'),
      { directoryId: d.id },
      new Date(),
    );
    const before = tokenCalls().length;
    const cases: Array<[string | undefined, RegExp]> = [
      [tampered, /state is not valid/],
      [expired, /state is expired/],
      [otherPurpose, /state is not valid/],
      [otherSecret, /state is not valid/],
      [JSON.stringify({ directoryId: d.id }), /state is not valid/], // Jackson's plain state
      [undefined, /state is missing/],
    ];
    for (const [st, message] of cases) {
      const q = new URLSearchParams({ code, ...(st !== undefined ? { state: st } : {}) });
      const r = await get(`${callback()}?${q}`, { cookie });
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(message);
      expect(r.body.error.message).toMatch(/Start the authorization of the directory again\.$/);
    }
    expect(tokenCalls().length).toBe(before);
  });

  it('refuses a callback replayed in another browser, or with the cookie of another directory’s flow', async () => {
    const a = await createDirectory(s, { type: 'google' });
    const b = await createDirectory(s, { type: 'google' });
    const flowA = await browserFlow(a.id);
    const flowB = await browserFlow(b.id);
    const before = tokenCalls().length;
    const noCookie = await get(flowA.back.toString());
    expect(noCookie.status).toBe(400);
    expect(noCookie.body.error.message).toMatch(/not bound to this browser/);
    const otherCookie = await get(flowA.back.toString(), { cookie: flowB.cookie });
    expect(otherCookie.status).toBe(400);
    expect(tokenCalls().length).toBe(before);
    // The right browser still completes it.
    expect((await get(flowA.back.toString(), { cookie: flowA.cookie })).status).toBe(200);
  });

  it('accepts a state made by generateAuthorizationUrl (embedding apps bind the browser themselves)', async () => {
    const d = await createDirectory(s, { type: 'google' });
    const { data } = await ctl().google.generateAuthorizationUrl({ directoryId: d.id });
    const consent = await get(data?.authorizationUrl as string);
    const done = await get(consent.headers.get('location') as string);
    expect(done.status).toBe(200);
    expect((await v1(s)('GET', `/${d.id}`)).body.data.google_access_token).toBe(fake.accessTokens.at(-1));
  });

  it('reports a declined consent, a rejected code and a deleted directory clearly', async () => {
    const d = await createDirectory(s, { type: 'google' });
    const flow = await browserFlow(d.id);
    const state = flow.back.searchParams.get('state') as string;
    const declined = await get(`${callback()}?error=access_denied&state=${encodeURIComponent(state)}`, {
      cookie: flow.cookie,
    });
    expect(declined.status).toBe(400);
    expect(declined.body.error.message).toBe(
      'Google did not grant access (access_denied). Start the authorization of the directory again.',
    );
    const badCode = await get(`${callback()}?code=4/not-issued&state=${encodeURIComponent(state)}`, {
      cookie: flow.cookie,
    });
    expect(badCode.status).toBe(400);
    expect(badCode.body.error.message).toMatch(/^Google refused the grant \(invalid_grant\)/);
    await v1(s)('DELETE', `/${d.id}`);
    const gone = await get(flow.back.toString(), { cookie: flow.cookie });
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toBe('Directory configuration not found.');
  });
});

describe('getAccessToken and setToken', () => {
  it('exchanges a code for Jackson’s credentials, expiry_date in milliseconds', async () => {
    const code = fake.issueCode(callback());
    const t0 = Date.now();
    const { data, error } = await ctl().google.getAccessToken({ directoryId: google.id, code });
    expect(error).toBeNull();
    expect(data).toEqual({
      access_token: fake.accessTokens.at(-1),
      refresh_token: fake.refreshTokens.at(-1),
      scope: SCOPES,
      token_type: 'Bearer',
      expiry_date: expect.any(Number),
    });
    expect(data?.expiry_date).toBeGreaterThanOrEqual(t0 + 3599_000);
    expect(data?.expiry_date).toBeLessThanOrEqual(Date.now() + 3599_000);
    // A code is good once.
    const again = await ctl().google.getAccessToken({ directoryId: google.id, code });
    expect(again.error?.code).toBe(400);
    expect(again.error?.message).toMatch(/invalid_grant/);
    expect((await ctl().google.getAccessToken({ directoryId: google.id, code: '' })).error).toEqual({
      message: 'Missing required parameters.',
      code: 400,
    });
  });

  it('stores the tokens and returns the directory with the provider fields', async () => {
    const { data, error } = await ctl().cloudDirectory.setToken({
      directoryId: google.id,
      accessToken: 'ya29.set-by-hand',
      refreshToken: '1//set-by-hand',
    });
    expect(error).toBeNull();
    expect(data).toMatchObject({
      id: google.id,
      name: google.name,
      tenant: 'acme',
      product: 'crm',
      type: 'google',
      google_domain: '',
      google_access_token: 'ya29.set-by-hand',
      google_refresh_token: '1//set-by-hand',
    });
    expect((await v1(s)('GET', `/${google.id}`)).body.data.google_refresh_token).toBe('1//set-by-hand');
  });

  it('answers Jackson’s setToken errors', async () => {
    const set = (p: Record<string, string>) => ctl().google.setToken(p as never);
    expect((await set({ directoryId: google.id, refreshToken: 'r' })).error).toEqual({
      message: 'Access token is required',
      code: 400,
    });
    expect((await set({ directoryId: google.id, accessToken: 'a' })).error).toEqual({
      message: 'Refresh token is required',
      code: 400,
    });
    expect((await set({ directoryId: crypto.randomUUID(), accessToken: 'a', refreshToken: 'r' })).error).toEqual({
      message: 'Failed to update directory',
      code: 400,
    });
  });

  it('says so when the Google client is not configured', async () => {
    const bare = await startDsyncServer();
    try {
      const d = await createDirectory(bare, { type: 'google' });
      const r = await bare.container.dsync.controller().google.generateAuthorizationUrl({ directoryId: d.id });
      expect(r.error).toEqual({
        message: 'Google Workspace sync is not configured: set dsync.google.client_id',
        code: 500,
      });
    } finally {
      await bare.close();
    }
  });
});

describe('the library: controllers({dsync: {providers: {google}}})', () => {
  it('takes Jackson’s Google options and completes an authorization with completeAuthorization', async () => {
    const { controllers } = await import('../../../src/index.ts');
    const lib = await controllers({
      externalUrl: 'https://my-cool-app.com',
      db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET },
      dsync: {
        providers: {
          google: {
            clientId: fake.clientId,
            clientSecret: fake.clientSecret,
            authorizePath: '/GOOGLE_AUTHORIZE_PATH',
            callbackPath: '/GOOGLE_CALLBACK_PATH',
            authUrl: fake.authUrl,
            tokenUrl: fake.tokenUrl,
            apiUrl: fake.apiUrl,
          },
        },
      },
    });
    try {
      const dsync = lib.directorySyncController;
      const d = (await dsync.directories.create({ tenant: 'lib', product: 'p', type: 'google' })).data;
      expect(d?.google_authorization_url).toBe('https://my-cool-app.com/GOOGLE_AUTHORIZE_PATH');
      const { data } = await dsync.google.generateAuthorizationUrl({ directoryId: d?.id as string });
      const u = new URL(data?.authorizationUrl as string);
      expect(u.searchParams.get('redirect_uri')).toBe('https://my-cool-app.com/GOOGLE_CALLBACK_PATH');
      // The embedding app's callback route receives code and state and hands them over.
      const consent = await get(u.toString());
      const back = new URL(consent.headers.get('location') as string);
      const done = await dsync.google.completeAuthorization({
        code: back.searchParams.get('code') as string,
        state: back.searchParams.get('state') as string,
      });
      expect(done.error).toBeNull();
      expect(done.data?.google_access_token).toBe(fake.accessTokens.at(-1));
      const forged = await dsync.google.completeAuthorization({
        code: 'x',
        state: JSON.stringify({ directoryId: d?.id }),
      });
      expect(forged.error?.code).toBe(400);
    } finally {
      await lib.close();
    }
  });
});
