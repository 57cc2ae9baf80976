/**
 * The device authorization grant (RFC 8628) end to end: `POST /oauth2/device/auth`, the browser at
 * `/oauth2/device/verify`, the user code accepted through the `@ory/hydra-client` SDK, login and
 * consent, and the device polling the token endpoint (raw requests on a manual clock for pending,
 * slow_down, expiry, denial and replay; `openid-client`'s device helpers on the real clock).
 */
import { Configuration, OAuth2Api } from '@ory/hydra-client';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { ALPHANUM_NO_AMBIGUOUS } from '../../../src/oauth2/device/codes.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { performUntil } from '../../helpers/cli.ts';
import { adminApi, Browser, type CreatedClient, createClient, param, runFlow } from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';
import { basic, introspect, type Reply, tokenRequest } from '../../helpers/tokens.ts';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const deviceClient = (t: TestServer, extra: Record<string, unknown> = {}) =>
  createClient(t, {
    grant_types: [DEVICE, 'refresh_token'],
    response_types: ['code'],
    scope: 'openid offline profile',
    ...extra,
  });

async function deviceAuth(t: TestServer, client: CreatedClient, form: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${t.publicUrl}/oauth2/device/auth`, {
    method: 'POST',
    headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: client.client_id, scope: 'openid offline', ...form }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, res };
}

const poll = (t: TestServer, client: CreatedClient, deviceCode: string) =>
  tokenRequest(t, client, { grant_type: DEVICE, device_code: deviceCode });

/** The browser part: verify page → device challenge → user code accepted → login → consent. */
async function authorizeDevice(
  t: TestServer,
  userCode: string,
  script: Parameters<typeof runFlow>[3] = {},
  browser = new Browser(),
) {
  const start = await browser.get(`${t.publicUrl}/oauth2/device/verify`);
  expect(start.status).toBe(302);
  const challenge = param(start.location, 'device_challenge') as string;
  expect(start.location.startsWith(`${t.publicUrl}/oauth2/fallbacks/device?`)).toBe(true);
  const accepted = await adminApi(t).acceptUserCodeRequest({
    deviceChallenge: challenge,
    acceptDeviceUserCodeRequest: { user_code: userCode },
  });
  return runFlow(t, browser, accepted.data.redirect_to, script);
}

describe('device authorization grant', () => {
  let t: TestServer;
  const clock = manualClock();
  beforeAll(async () => {
    t = await startTestServer({
      clock,
      overrides: { 'oauth2.device_authorization.token_polling_interval': '5s', 'ttl.device_user_code': '10m' },
    });
  });
  afterAll(() => t?.close());

  it('answers the device authorization request as Hydra (codes, URIs, expiry, interval, no-store)', async () => {
    const client = await deviceClient(t);
    const r = await deviceAuth(t, client);
    expect(r.status).toBe(200);
    expect(r.res.headers.get('cache-control')).toBe('no-store');
    expect(r.res.headers.get('content-type')).toBe('application/json;charset=UTF-8');
    expect(Object.keys(r.body).sort()).toEqual([
      'device_code',
      'expires_in',
      'interval',
      'user_code',
      'verification_uri',
      'verification_uri_complete',
    ]);
    expect(r.body.device_code).toMatch(/^ory_dc_/);
    expect(r.body.user_code).toHaveLength(8);
    for (const ch of r.body.user_code as string) expect(ALPHANUM_NO_AMBIGUOUS).toContain(ch);
    expect(r.body.verification_uri).toBe(`${t.container.config.urls.self.public}oauth2/device/verify`);
    expect(r.body.verification_uri_complete).toBe(`${r.body.verification_uri}?user_code=${r.body.user_code}`);
    expect(r.body.expires_in).toBe(600);
    expect(r.body.interval).toBe(5);
    // Only signatures are stored.
    const rows = await t.container.db
      .selectFrom('oauth2_device_requests')
      .select(['signature', 'user_code_signature'])
      .execute();
    const flat = JSON.stringify(rows);
    expect(flat).not.toContain(r.body.user_code);
    expect(flat).not.toContain((r.body.device_code as string).split('.')[0]);
  });

  it('refuses clients without the grant, a client_id mismatch, foreign scopes and an empty body', async () => {
    const plain = await createClient(t, { grant_types: ['authorization_code'], scope: 'openid' });
    expect((await deviceAuth(t, plain, { scope: 'openid' })).body.error).toBe('invalid_grant');
    const client = await deviceClient(t);
    const mismatch = await deviceAuth(t, client, { client_id: 'someone-else' });
    expect([mismatch.status, mismatch.body.error]).toEqual([400, 'invalid_request']);
    expect(mismatch.body.error_description).toContain('Provided client_id mismatch.');
    expect((await deviceAuth(t, client, { scope: 'admin' })).body.error).toBe('invalid_scope');
    const empty = await fetch(`${t.publicUrl}/oauth2/device/auth`, { method: 'POST' });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('pending → slow_down → (login, consent) → tokens once; a replay is invalid_grant and revokes them', async () => {
    const client = await deviceClient(t);
    const auth = (await deviceAuth(t, client)).body;
    const pending = await poll(t, client, auth.device_code);
    expect([pending.status, pending.body.error]).toEqual([400, 'authorization_pending']);
    const tooFast = await poll(t, client, auth.device_code);
    expect([tooFast.status, tooFast.body.error]).toEqual([400, 'slow_down']);
    clock.advance(5_000);
    expect((await poll(t, client, auth.device_code)).body.error).toBe('authorization_pending');

    const flow = await authorizeDevice(t, auth.user_code);
    expect(flow.final).toBe(`${t.publicUrl}/oauth2/fallbacks/device/done?client_id=${client.client_id}`);
    expect(flow.consentSeen?.skip).toBe(false);

    clock.advance(5_000);
    const ok = await poll(t, client, auth.device_code);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ token_type: 'bearer', scope: 'openid offline' });
    expect(ok.body.refresh_token).toMatch(/^ory_rt_/);
    expect(typeof ok.body.id_token).toBe('string');
    const info = await introspect(t, ok.body.access_token);
    expect(info.body).toMatchObject({ active: true, sub: 'alice', client_id: client.client_id });

    clock.advance(5_000);
    const replay = await poll(t, client, auth.device_code);
    expect([replay.status, replay.body.error]).toEqual([400, 'invalid_grant']);
    expect((await introspect(t, ok.body.access_token)).body.active).toBe(false);
  });

  it('a refused consent (or login) gives the device access_denied', async () => {
    const client = await deviceClient(t);
    const auth = (await deviceAuth(t, client)).body;
    const browser = new Browser();
    await expect(authorizeDevice(t, auth.user_code, { consent: () => false }, browser)).rejects.toThrow(
      /unexpected status 400/,
    );
    clock.advance(5_000);
    const denied = await poll(t, client, auth.device_code);
    expect([denied.status, denied.body.error]).toEqual([403, 'access_denied']);

    const other = (await deviceAuth(t, client)).body;
    await expect(authorizeDevice(t, other.user_code, { login: () => false })).rejects.toThrow(/unexpected status 400/);
    clock.advance(5_000);
    expect((await poll(t, client, other.device_code)).body.error).toBe('access_denied');
  });

  it('expired_token after ttl.device_user_code; the expired user code is refused too', async () => {
    const client = await deviceClient(t);
    const auth = (await deviceAuth(t, client)).body;
    clock.advance(10 * 60_000 + 1_000);
    const r = await poll(t, client, auth.device_code);
    expect([r.status, r.body.error]).toEqual([400, 'expired_token']);
    const browser = new Browser();
    const start = await browser.get(`${t.publicUrl}/oauth2/device/verify`);
    const res = await fetch(
      `${t.adminUrl}/admin/oauth2/auth/requests/device/accept?device_challenge=${encodeURIComponent(
        param(start.location, 'device_challenge') as string,
      )}`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_code: auth.user_code }),
      },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error_description: string }).error_description).toContain(
      "The 'user_code' session could not be found or has expired",
    );
  });

  it('limits wrong user codes per device challenge and needs challenge and user_code', async () => {
    const browser = new Browser();
    const start = await browser.get(`${t.publicUrl}/oauth2/device/verify?user_code=abc`);
    expect(param(start.location, 'user_code')).toBe('abc');
    const challenge = param(start.location, 'device_challenge') as string;
    const put = (body: unknown, c = challenge) =>
      fetch(`${t.adminUrl}/admin/oauth2/auth/requests/device/accept?device_challenge=${encodeURIComponent(c)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (let i = 0; i < 5; i++) expect((await put({ user_code: `wrong${i}` })).status).toBe(400);
    const limited = await put({ user_code: 'wrong-again' });
    expect(limited.status).toBe(429);
    expect((await put({})).status).toBe(400);
    const none = await fetch(`${t.adminUrl}/admin/oauth2/auth/requests/device/accept`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_code: 'x' }),
    });
    expect(none.status).toBe(400);
    expect((await put({ user_code: 'x' }, 'not-a-challenge')).status).toBe(404);
  });

  it('a device verifier works once and only with the browser that started the verification', async () => {
    const client = await deviceClient(t);
    const auth = (await deviceAuth(t, client)).body;
    const browser = new Browser();
    const start = await browser.get(`${t.publicUrl}/oauth2/device/verify`);
    const { data } = await adminApi(t).acceptUserCodeRequest({
      deviceChallenge: param(start.location, 'device_challenge') as string,
      acceptDeviceUserCodeRequest: { user_code: auth.user_code },
    });
    const stranger = await new Browser().get(data.redirect_to);
    expect(stranger.status).toBe(403);
    const first = await browser.get(data.redirect_to);
    expect(first.status).toBe(302);
    expect(param(first.location, 'login_challenge')).toBeTruthy();
    const again = await browser.get(data.redirect_to);
    expect(again.status).toBe(403);
    expect(((await again.res.json()) as { error_description: string }).error_description).toContain(
      'already been used',
    );
  });

  it('works through the SDK’s oAuth2DeviceFlow, performOAuth2DeviceVerificationFlow and acceptUserCodeRequest', async () => {
    const client = await deviceClient(t);
    const pub = new OAuth2Api(new Configuration({ basePath: t.publicUrl }));
    // The SDK's oAuth2DeviceFlow declares no parameters: the form goes in as request data.
    const { data: auth } = await pub.oAuth2DeviceFlow({
      headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
      data: new URLSearchParams({ client_id: client.client_id, scope: 'openid offline' }).toString(),
    });
    expect(auth.device_code).toMatch(/^ory_dc_/);
    const verify = await pub.performOAuth2DeviceVerificationFlow({
      maxRedirects: 0,
      validateStatus: (s) => s === 302,
    });
    const location = String(verify.headers.location);
    const cookies = (verify.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
    const browser = new Browser();
    for (const c of cookies.split('; ')) {
      const i = c.indexOf('=');
      browser.cookies.set(c.slice(0, i), c.slice(i + 1));
    }
    const { data } = await adminApi(t).acceptUserCodeRequest({
      deviceChallenge: param(location, 'device_challenge') as string,
      acceptDeviceUserCodeRequest: { user_code: auth.user_code as string },
    });
    const flow = await runFlow(t, browser, data.redirect_to);
    expect(flow.final).toBe(`${t.publicUrl}/oauth2/fallbacks/device/done?client_id=${client.client_id}`);
    clock.advance(5_000);
    const ok = await poll(t, client, auth.device_code as string);
    expect([ok.status, ok.body.token_type]).toEqual([200, 'bearer']);
  });

  it('serves the fallback pages', async () => {
    const verify = await fetch(`${t.publicUrl}/oauth2/fallbacks/device`);
    expect(verify.status).toBe(200);
    expect(await verify.text()).toContain('urls.device.verification');
    const done = await fetch(`${t.publicUrl}/oauth2/fallbacks/device/done`);
    expect(await done.text()).toContain('You successfully authenticated on your device!');
  });

  it('the janitor deletes expired device requests', async () => {
    const client = await deviceClient(t);
    await deviceAuth(t, client);
    clock.advance(11 * 60_000);
    const before = await t.container.db.selectFrom('oauth2_device_requests').select('signature').execute();
    expect(before.length).toBeGreaterThan(0);
    await t.container.oauth2.janitor.run({ targets: ['requests'], limit: 1000, batchSize: 100 });
    const after = await t.container.db.selectFrom('oauth2_device_requests').select('signature').execute();
    expect(after).toEqual([]);
  });
});

describe('device flow through openid-client', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'oauth2.device_authorization.token_polling_interval': '1s' } });
  });
  afterAll(() => t?.close());

  it('initiateDeviceAuthorization and pollDeviceAuthorizationGrant get tokens once the user consents', async () => {
    const client = await deviceClient(t);
    const config = await discoverAs(t, client);
    const auth = await oidc.initiateDeviceAuthorization(config, { scope: 'openid offline' });
    expect(auth.interval).toBe(1);
    const signal = AbortSignal.timeout(20_000);
    const tokens = oidc.pollDeviceAuthorizationGrant(config, auth, undefined, { signal });
    const flow = await authorizeDevice(t, auth.user_code);
    expect(flow.final).toContain('/oauth2/fallbacks/device/done');
    const got = await tokens;
    expect(got.access_token).toMatch(/^ory_at_/);
    expect(got.claims()?.sub).toBe('alice');
  });
});

describe('gatehouse perform device-code', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'oauth2.device_authorization.token_polling_interval': '1s' } });
  });
  afterAll(() => t?.close());

  it('prints the verification URI and user code, polls, and prints the tokens once the user consents', async () => {
    const client = await deviceClient(t);
    const cli = await performUntil(
      ['device-code', '--endpoint', t.publicUrl, '--format', 'json'],
      client,
      /open (http:\/\/\S+\/oauth2\/device\/verify\?user_code=\S+)/,
      25_000,
    );
    try {
      const flow = await authorizeDevice(t, param(cli.match, 'user_code') as string);
      expect(flow.final).toContain('/oauth2/fallbacks/device/done');
      expect(await cli.exited).toBe(0);
      const tokens = JSON.parse(cli.stdout().slice(cli.stdout().indexOf('{')));
      expect(tokens.access_token).toMatch(/^ory_at_/);
      expect(tokens.refresh_token).toMatch(/^ory_rt_/);
    } finally {
      cli.stop();
    }
  });
});
