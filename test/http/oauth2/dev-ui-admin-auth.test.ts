/**
 * The development login app (`dev_ui.enabled`) with admin API authentication on
 * (`serve.admin.auth.enabled`), through real HTTP on real PostgreSQL: the login, consent, logout and
 * device pages still answer their challenges, while the admin API keeps refusing calls without a
 * credential (the dev pages take no admin credential and open no way around the admin guard).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashAdminKey } from '../../../src/core/http/admin-auth.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';
import { Browser, CB, type CreatedClient, codeFlowUrl, exchangeCode, param, pkcePair } from '../../helpers/oauth2.ts';
import { basic } from '../../helpers/tokens.ts';

const KEY = 'gha_test-admin-key-of-the-dev-ui-suite-0001';
const LOGGED_OUT = 'http://127.0.0.1:9999/logged-out';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    overrides: {
      'dev_ui.enabled': true,
      'serve.admin.auth.enabled': true,
      'serve.admin.auth.api_keys': [hashAdminKey(KEY)],
    },
  });
});
afterAll(async () => t?.close());

async function createClient(body: Record<string, unknown>): Promise<CreatedClient> {
  const r = await call(t.adminUrl, 'POST', '/admin/clients', body, { authorization: `Bearer ${KEY}` });
  expect(r.status).toBe(201);
  return r.body as unknown as CreatedClient;
}

const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

/** Follows redirects within the public listener; stops at the first page or at a URL outside it. */
async function walk(browser: Browser, url: string, init: RequestInit = {}) {
  let step = await browser.get(url, init);
  for (let i = 0; i < 10 && step.status >= 300 && step.status < 400 && step.location; i++) {
    url = new URL(step.location, url).toString();
    if (!url.startsWith(t.publicUrl)) break;
    step = await browser.get(url);
  }
  return { url, status: step.status, html: await step.res.text() };
}

/** Posts a dev page's form: its challenge and CSRF token, and `fields`. */
const submit = (browser: Browser, path: string, page: string, fields: Record<string, string | string[]>) => {
  const body = new URLSearchParams({ challenge: hidden(page, 'challenge'), csrf: hidden(page, 'csrf') });
  for (const [k, v] of Object.entries(fields)) for (const x of [v].flat()) body.append(k, x);
  return walk(browser, `${t.publicUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
};

describe('development login app with admin API authentication on', () => {
  it('signs in, consents and signs out; the admin API still refuses the same calls without a credential', async () => {
    const c = await createClient({
      client_name: 'Dev <App>',
      redirect_uris: [CB],
      post_logout_redirect_uris: [LOGGED_OUT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid offline_access profile',
    });
    const browser = new Browser();
    const pkce = pkcePair();
    const login = await walk(
      browser,
      codeFlowUrl(t, c, 'openid offline_access profile', {
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      }),
    );
    expect(new URL(login.url).pathname).toBe('/dev/login');
    const challenge = param(login.url, 'login_challenge') ?? '';
    // The admin API's guard is untouched: the login request is not readable there without a credential.
    const unauthenticated = await call(
      t.adminUrl,
      'GET',
      `/admin/oauth2/auth/requests/login?login_challenge=${encodeURIComponent(challenge)}`,
    );
    expect(unauthenticated.status).toBe(401);
    expect(login.status).toBe(200);
    expect(login.html).toContain('Dev &lt;App&gt;');

    const consent = await submit(browser, '/dev/login', login.html, {
      subject: 'ada@example.com',
      password: 'gatehouse-dev',
      remember: '1',
      action: 'accept',
    });
    expect(new URL(consent.url).pathname).toBe('/dev/consent');
    expect(consent.status).toBe(200);
    expect(consent.html).toContain('ada@example.com');
    const done = await submit(browser, '/dev/consent', consent.html, {
      grant_scope: ['openid', 'offline_access'],
      action: 'accept',
    });
    expect(done.url.startsWith(`${CB}?`)).toBe(true);
    const tokens = await exchangeCode(t, c, param(done.url, 'code') ?? '', { code_verifier: pkce.verifier });
    expect(tokens.status).toBe(200);
    expect(String(tokens.body.scope).split(' ').sort()).toEqual(['offline_access', 'openid']);
    const idToken = String(tokens.body.id_token);
    expect(JSON.parse(Buffer.from(idToken.split('.')[1] ?? '', 'base64url').toString()).sub).toBe('ada@example.com');

    const logoutUrl = new URL('/oauth2/sessions/logout', t.publicUrl);
    logoutUrl.search = new URLSearchParams({
      id_token_hint: idToken,
      post_logout_redirect_uri: LOGGED_OUT,
      state: 'bye',
    }).toString();
    const logout = await walk(browser, logoutUrl.toString());
    expect(new URL(logout.url).pathname).toBe('/dev/logout');
    expect(logout.status).toBe(200);
    expect(logout.html).toContain('ada@example.com');
    const gone = await submit(browser, '/dev/logout', logout.html, { action: 'accept' });
    expect(gone.url).toBe(`${LOGGED_OUT}?state=bye`);
  });

  it('verifies a device: user code, login, consent, and a success page naming the client; the device gets tokens', async () => {
    const c = await createClient({
      client_name: 'Kitchen <TV>',
      grant_types: [DEVICE_GRANT, 'refresh_token'],
      response_types: ['code'],
      scope: 'openid offline',
    });
    const auth = await fetch(`${t.publicUrl}/oauth2/device/auth`, {
      method: 'POST',
      headers: { authorization: basic(c), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: c.client_id, scope: 'openid offline' }),
    });
    expect(auth.status).toBe(200);
    const { device_code, user_code, verification_uri } = (await auth.json()) as Record<string, string>;
    const browser = new Browser();
    const page = await walk(browser, verification_uri ?? '');
    expect(new URL(page.url).pathname).toBe('/dev/device');
    expect(page.status).toBe(200);
    const login = await submit(browser, '/dev/device', page.html, { user_code: user_code ?? '' });
    expect(new URL(login.url).pathname).toBe('/dev/login');
    expect(login.status).toBe(200);
    const consent = await submit(browser, '/dev/login', login.html, {
      subject: 'ada@example.com',
      password: 'gatehouse-dev',
      action: 'accept',
    });
    expect(new URL(consent.url).pathname).toBe('/dev/consent');
    const done = await submit(browser, '/dev/consent', consent.html, {
      grant_scope: ['openid', 'offline'],
      action: 'accept',
    });
    expect(new URL(done.url).pathname).toBe('/dev/device/done');
    expect(done.html).toContain('Kitchen &lt;TV&gt;');
    const polled = await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basic(c), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: device_code ?? '' }),
    });
    expect(polled.status).toBe(200);
  });
});
