/**
 * The development login, consent and logout app (`dev_ui.enabled`): its pages over plain HTTP (CSRF,
 * wrong passwords, escaping, headers, the start-up warning), the device verification page with the
 * whole device flow, and a full OpenID Connect login and
 * logout driven by a real headless Chromium (Debian's `chromium` through playwright-core).
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  ARTIFACTS,
  announceChromium,
  axeViolations,
  haveChromium,
  launchChromium as launch,
} from '../../helpers/browser.ts';
import { type CreatedClient, pkcePair, randomState } from '../../helpers/oauth2.ts';

announceChromium('dev-ui');

let t: TestServer;
let rp: Server;
let rpUrl: string;
const logs = new LogCapture();

beforeAll(async () => {
  t = await startTestServer({ overrides: { 'dev_ui.enabled': true }, log: logs.logger('warn') });
  // The relying party's callback and post-logout pages.
  rp = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`relying party: ${req.url}`);
  });
  await new Promise<void>((r) => rp.listen(0, '127.0.0.1', r));
  const a = rp.address();
  rpUrl = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise((r) => rp?.close(r));
  await t?.close();
});

async function client(): Promise<CreatedClient> {
  const r = await fetch(`${t.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Example <RP> & Co',
      redirect_uris: [`${rpUrl}/callback`],
      post_logout_redirect_uris: [`${rpUrl}/logged-out`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid offline_access profile email',
      audience: ['https://api.example.com'],
    }),
  });
  expect(r.status).toBe(201);
  return (await r.json()) as CreatedClient;
}

function authUrl(c: CreatedClient, challenge: string, state: string) {
  const u = new URL('/oauth2/auth', t.publicUrl);
  u.search = new URLSearchParams({
    client_id: c.client_id,
    response_type: 'code',
    redirect_uri: `${rpUrl}/callback`,
    scope: 'openid offline_access profile email',
    audience: 'https://api.example.com',
    state,
    nonce: randomState(),
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  return u.toString();
}

/** Follows redirects by hand with a cookie jar, stopping at the first page that is not a redirect. */
async function walk(url: string, jar: Map<string, string>, init: RequestInit = {}) {
  let res = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, cookie: cookie(jar) } });
  for (let i = 0; i < 10; i++) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, ...v] = (pair ?? '').split('=');
      if (k) jar.set(k, v.join('='));
    }
    const loc = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !loc) break;
    url = new URL(loc, url).toString();
    if (!url.startsWith(t.publicUrl)) return { url, res };
    res = await fetch(url, { redirect: 'manual', headers: { cookie: cookie(jar) } });
  }
  return { url, res };
}
const cookie = (jar: Map<string, string>) => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

describe('development login app over HTTP', () => {
  it('warns loudly at start', () => {
    const line = logs.lines.find((l) => l.includes('DEVELOPMENT LOGIN APP IS ON'));
    expect(line).toBeDefined();
    expect(line).toContain('ada@example.com');
    expect(line).toContain('never use it in production');
  });

  it('shows the escaped client on a login page under the strict CSP, refuses a bad CSRF token and a wrong password', async () => {
    const c = await client();
    const jar = new Map<string, string>();
    const { url, res } = await walk(authUrl(c, pkcePair().challenge, randomState()), jar);
    expect(url).toContain('/dev/login?login_challenge=');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'.*form-action /);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    expect(html).toContain('Example &lt;RP&gt; &amp; Co');
    expect(html).not.toContain('<RP>');
    expect(html).toMatch(/<label for="password">/);
    const challenge = hidden(html, 'challenge');
    const post = (fields: Record<string, string>) =>
      fetch(`${t.publicUrl}/dev/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie(jar) },
        body: new URLSearchParams(fields),
      });
    const forged = await post({ challenge, csrf: 'forged', subject: 'ada@example.com', password: 'gatehouse-dev' });
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain('The form is invalid or expired');
    const wrong = await post({ challenge, csrf: hidden(html, 'csrf'), subject: 'ada@example.com', password: 'nope' });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Unknown user or wrong password.');
    // A token of one challenge does not answer another.
    const other = await walk(authUrl(c, pkcePair().challenge, randomState()), new Map());
    const otherChallenge = hidden(await other.res.text(), 'challenge');
    expect(otherChallenge).not.toBe(challenge);
    const swapped = await post({
      challenge: otherChallenge,
      csrf: hidden(html, 'csrf'),
      subject: 'ada@example.com',
      password: 'gatehouse-dev',
    });
    expect(swapped.status).toBe(403);
  });

  it('grants only requested scopes that were ticked, whatever the form posts, and denies on Deny', async () => {
    const c = await client();
    const jar = new Map<string, string>();
    const pkce = pkcePair();
    const first = await walk(authUrl(c, pkce.challenge, randomState()), jar);
    const loginHtml = await first.res.text();
    const form = (path: string, fields: Record<string, string | string[]>) => {
      const body = new URLSearchParams();
      for (const [k, v] of Object.entries(fields)) for (const x of [v].flat()) body.append(k, x);
      return walk(`${t.publicUrl}${path}`, jar, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    };
    const consent = await form('/dev/login', {
      challenge: hidden(loginHtml, 'challenge'),
      csrf: hidden(loginHtml, 'csrf'),
      subject: 'ada@example.com',
      password: 'gatehouse-dev',
    });
    expect(new URL(consent.url).pathname).toBe('/dev/consent');
    const consentHtml = await consent.res.text();
    const done = await form('/dev/consent', {
      challenge: hidden(consentHtml, 'challenge'),
      csrf: hidden(consentHtml, 'csrf'),
      grant_scope: ['openid', 'admin', 'email'],
      action: 'accept',
    });
    expect(done.url.startsWith(`${rpUrl}/callback?`)).toBe(true);
    const tr = await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: new URL(done.url).searchParams.get('code') ?? '',
        redirect_uri: `${rpUrl}/callback`,
        code_verifier: pkce.verifier,
      }),
    });
    expect(tr.status).toBe(200);
    expect(((await tr.json()) as { scope: string }).scope.split(' ').sort()).toEqual(['email', 'openid']);

    // A second flow (login not remembered, so the form shows again): Deny ends in access_denied.
    const again = await walk(authUrl(c, pkcePair().challenge, randomState()), jar);
    const againHtml = await again.res.text();
    const consent2 = await form('/dev/login', {
      challenge: hidden(againHtml, 'challenge'),
      csrf: hidden(againHtml, 'csrf'),
      subject: 'ada@example.com',
      password: 'gatehouse-dev',
    });
    const c2 = await consent2.res.text();
    const denied = await form('/dev/consent', {
      challenge: hidden(c2, 'challenge'),
      csrf: hidden(c2, 'csrf'),
      action: 'deny',
    });
    expect(new URL(denied.url).searchParams.get('error')).toBe('access_denied');
  });

  it('needs no reachable admin API: the pages answer the challenges in-process (urls.self.admin pointing nowhere)', async () => {
    const lone = await startTestServer({
      overrides: { 'dev_ui.enabled': true, 'urls.self.admin': 'http://127.0.0.1:1/' },
    });
    try {
      const r = await fetch(`${lone.adminUrl}/admin/clients`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Lone', redirect_uris: [`${rpUrl}/callback`], scope: 'openid' }),
      });
      const c = (await r.json()) as CreatedClient;
      const u = new URL('/oauth2/auth', lone.publicUrl);
      u.search = new URLSearchParams({
        client_id: c.client_id,
        response_type: 'code',
        redirect_uri: `${rpUrl}/callback`,
        scope: 'openid',
        state: randomState(),
      }).toString();
      const auth = await fetch(u, { redirect: 'manual' });
      const login = new URL(auth.headers.get('location') ?? '', lone.publicUrl);
      expect(login.pathname).toBe('/dev/login');
      const page = await fetch(login, {
        headers: {
          cookie: auth.headers
            .getSetCookie()
            .map((x) => x.split(';')[0])
            .join('; '),
        },
      });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('Lone');
    } finally {
      await lone.close();
    }
  });

  it('answers an unknown challenge with an error page, not a 500', async () => {
    const r = await fetch(`${t.publicUrl}/dev/consent?consent_challenge=nope`);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    const missing = await fetch(`${t.publicUrl}/dev/login`);
    expect(missing.status).toBe(400);
  });
});

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

async function deviceClient(): Promise<CreatedClient> {
  const r = await fetch(`${t.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Living <Room> TV',
      grant_types: [DEVICE_GRANT, 'refresh_token'],
      response_types: ['code'],
      scope: 'openid offline profile',
    }),
  });
  expect(r.status).toBe(201);
  return (await r.json()) as CreatedClient;
}
const basicAuth = (c: CreatedClient) => `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`;
async function deviceAuth(c: CreatedClient) {
  const r = await fetch(`${t.publicUrl}/oauth2/device/auth`, {
    method: 'POST',
    headers: { authorization: basicAuth(c), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: c.client_id, scope: 'openid offline' }),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as { device_code: string; user_code: string; verification_uri: string };
}
const pollToken = (c: CreatedClient, deviceCode: string) =>
  fetch(`${t.publicUrl}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(c), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: deviceCode }),
  });
describe('development device verification page over HTTP', () => {
  const form = (jar: Map<string, string>, path: string, fields: Record<string, string>) =>
    walk(`${t.publicUrl}${path}`, jar, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });

  it('verify → user code form → login → consent → success page; the device then gets tokens', async () => {
    const c = await deviceClient();
    const auth = await deviceAuth(c);
    const jar = new Map<string, string>();
    const page = await walk(auth.verification_uri, jar);
    expect(new URL(page.url).pathname).toBe('/dev/device');
    expect(new URL(page.url).searchParams.get('device_challenge')).toBeTruthy();
    expect(page.res.status).toBe(200);
    expect(page.res.headers.get('content-security-policy')).toMatch(/default-src 'none'.*form-action /);
    const html = await page.res.text();
    expect(html).toMatch(/<label for="user_code">[^<]+<\/label>\s*<input type="text" id="user_code" name="user_code"/);
    expect(html).not.toContain('<script');

    const login = await form(jar, '/dev/device', {
      challenge: hidden(html, 'challenge'),
      csrf: hidden(html, 'csrf'),
      user_code: auth.user_code,
    });
    expect(new URL(login.url).pathname).toBe('/dev/login');
    const loginHtml = await login.res.text();
    expect(loginHtml).toContain('Living &lt;Room&gt; TV');
    const consent = await form(jar, '/dev/login', {
      challenge: hidden(loginHtml, 'challenge'),
      csrf: hidden(loginHtml, 'csrf'),
      subject: 'ada@example.com',
      password: 'gatehouse-dev',
    });
    expect(new URL(consent.url).pathname).toBe('/dev/consent');
    const consentHtml = await consent.res.text();
    const body = new URLSearchParams({
      challenge: hidden(consentHtml, 'challenge'),
      csrf: hidden(consentHtml, 'csrf'),
      action: 'accept',
    });
    body.append('grant_scope', 'openid');
    body.append('grant_scope', 'offline');
    const done = await walk(`${t.publicUrl}/dev/consent`, jar, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    expect(new URL(done.url).pathname).toBe('/dev/device/done');
    expect(done.res.status).toBe(200);
    const doneHtml = await done.res.text();
    expect(doneHtml).toContain('You successfully authenticated on your device');
    expect(doneHtml).toContain('Living &lt;Room&gt; TV');

    // The first poll (polling earlier than the interval would be slow_down).
    const tokens = await pollToken(c, auth.device_code);
    expect(tokens.status).toBe(200);
    const tb = (await tokens.json()) as Record<string, unknown>;
    expect(typeof tb.access_token).toBe('string');
    expect(typeof tb.refresh_token).toBe('string');
    expect(typeof tb.id_token).toBe('string');
  });

  it('pre-fills the code of verification_uri_complete, shows a wrong code again with an error, refuses a forged token, then limits', async () => {
    const c = await deviceClient();
    const auth = await deviceAuth(c);
    const jar = new Map<string, string>();
    const page = await walk(`${auth.verification_uri}?user_code=${encodeURIComponent(auth.user_code)}`, jar);
    const html = await page.res.text();
    expect(html).toContain(`value="${auth.user_code}"`);
    const challenge = hidden(html, 'challenge');
    const csrf = hidden(html, 'csrf');

    const forged = await form(jar, '/dev/device', { challenge, csrf: 'forged', user_code: auth.user_code });
    expect(forged.res.status).toBe(403);
    const empty = await form(jar, '/dev/device', { challenge, csrf, user_code: '  ' });
    expect(empty.res.status).toBe(400);
    expect(await empty.res.text()).toContain('Enter the code shown on the device.');

    const wrong = await form(jar, '/dev/device', { challenge, csrf, user_code: 'not-the-code<b>' });
    expect(wrong.res.status).toBe(400);
    expect(new URL(wrong.url).pathname).toBe('/dev/device');
    const wrongHtml = await wrong.res.text();
    expect(wrongHtml).toContain('role="alert"');
    expect(wrongHtml).toContain('This code is wrong or has expired.');
    expect(wrongHtml).toContain('value="not-the-code&lt;b&gt;"');
    expect(wrongHtml).toContain('aria-describedby="device-error"');
    // The form of the error page still works: the right code goes on to the login page.
    const login = await form(jar, '/dev/device', {
      challenge: hidden(wrongHtml, 'challenge'),
      csrf: hidden(wrongHtml, 'csrf'),
      user_code: auth.user_code,
    });
    expect(new URL(login.url).pathname).toBe('/dev/login');

    // Another verification: after 5 wrong codes the page says to start again (429), never a 500.
    const auth2 = await deviceAuth(c);
    const jar2 = new Map<string, string>();
    const html2 = await (await walk(auth2.verification_uri, jar2)).res.text();
    const f2 = { challenge: hidden(html2, 'challenge'), csrf: hidden(html2, 'csrf') };
    for (let i = 0; i < 5; i++) {
      expect((await form(jar2, '/dev/device', { ...f2, user_code: `wrong${i}` })).res.status).toBe(400);
    }
    const limited = await form(jar2, '/dev/device', { ...f2, user_code: auth2.user_code });
    expect(limited.res.status).toBe(429);
    expect(await limited.res.text()).toContain('Too many wrong codes. Start again on the device');
  });

  it('answers a missing or unknown challenge with an error page, not a 500', async () => {
    const missing = await fetch(`${t.publicUrl}/dev/device`);
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain('The device_challenge query parameter is missing.');
    const html = await (await fetch(`${t.publicUrl}/dev/device?device_challenge=nope`)).text();
    const r = await fetch(`${t.publicUrl}/dev/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ challenge: 'nope', csrf: hidden(html, 'csrf'), user_code: 'abc' }),
    });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe.skipIf(!haveChromium)('development login app in a real browser (Chromium)', () => {
  it('has no serious accessibility violation (axe-core) on the login, consent and error pages', async () => {
    const browser = await launch();
    try {
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      await page.goto(authUrl(await client(), pkcePair().challenge, randomState()));
      expect(new URL(page.url()).pathname).toBe('/dev/login');
      expect(await axeViolations(page)).toEqual([]);
      await page.getByLabel('User (subject)').fill('ada@example.com');
      await page.getByLabel('Password').fill('wrong');
      await page.getByRole('button', { name: 'Sign in' }).click();
      expect(await page.getByRole('alert').textContent()).toContain('Unknown user or wrong password.');
      expect(await axeViolations(page)).toEqual([]);
      await page.getByLabel('Password').fill('gatehouse-dev');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/dev/consent');
      expect(await axeViolations(page)).toEqual([]);
      await page.goto(`${t.publicUrl}/dev/consent?consent_challenge=unknown`);
      expect(await axeViolations(page)).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('completes the device flow on the device pages (no serious axe violation), then the device gets tokens', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const browser = await launch();
    try {
      const c = await deviceClient();
      const auth = await deviceAuth(c);
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      await page.goto(auth.verification_uri);
      expect(new URL(page.url()).pathname).toBe('/dev/device');
      expect(await axeViolations(page)).toEqual([]);
      await page.getByLabel('Code shown on the device').fill('WRONGCODE');
      await page.getByRole('button', { name: 'Continue' }).click();
      expect(await page.getByRole('alert').textContent()).toContain('This code is wrong or has expired.');
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: `${ARTIFACTS}dev-device.png`, fullPage: true });
      await page.getByLabel('Code shown on the device').fill(auth.user_code);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.waitForURL((u) => u.pathname === '/dev/login');
      await page.getByLabel('User (subject)').fill('ada@example.com');
      await page.getByLabel('Password').fill('gatehouse-dev');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/dev/consent');
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((u) => u.pathname === '/dev/device/done');
      expect(await page.getByRole('status').textContent()).toContain('You successfully authenticated on your device');
      expect(await axeViolations(page)).toEqual([]);
      const tokens = await pollToken(c, auth.device_code);
      expect(tokens.status).toBe(200);
      expect(((await tokens.json()) as Record<string, unknown>).access_token).toBeTypeOf('string');
    } finally {
      await browser.close();
    }
  });

  it('logs in, grants only the ticked scopes, and logs out', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const browser = await launch();
    try {
      const c = await client();
      const pkce = pkcePair();
      const state = randomState();
      const page = await browser.newPage();
      await page.goto(authUrl(c, pkce.challenge, state));
      expect(new URL(page.url()).pathname).toBe('/dev/login');
      expect(await page.locator('main').textContent()).toContain('Example <RP> & Co');
      await page.screenshot({ path: `${ARTIFACTS}dev-login.png`, fullPage: true });
      await page.getByLabel('User (subject)').fill('ada@example.com');
      await page.getByLabel('Password').fill('gatehouse-dev');
      await page.getByLabel('Remember me on this browser').check();
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/dev/consent');
      for (const s of ['openid', 'offline_access', 'profile', 'email']) {
        expect(await page.getByRole('checkbox', { name: s, exact: true }).isChecked()).toBe(true);
      }
      expect(await page.locator('main').textContent()).toContain('https://api.example.com');
      await page.getByRole('checkbox', { name: 'email', exact: true }).uncheck();
      await page.screenshot({ path: `${ARTIFACTS}dev-consent.png`, fullPage: true });
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((u) => u.pathname === '/callback');
      const cb = new URL(page.url());
      expect(cb.searchParams.get('state')).toBe(state);
      const code = cb.searchParams.get('code') ?? '';
      expect(code).not.toBe('');

      const tr = await fetch(`${t.publicUrl}/oauth2/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: `${rpUrl}/callback`,
          code_verifier: pkce.verifier,
        }),
      });
      expect(tr.status).toBe(200);
      const tokens = (await tr.json()) as Record<string, string>;
      expect(tokens.scope?.split(' ').sort()).toEqual(['offline_access', 'openid', 'profile']);
      expect(tokens.refresh_token).toBeTruthy();
      const claims = JSON.parse(Buffer.from(tokens.id_token?.split('.')[1] ?? '', 'base64url').toString());
      expect(claims.sub).toBe('ada@example.com');
      expect(claims.name).toBe('Ada Lovelace');
      const intro = await fetch(`${t.adminUrl}/admin/oauth2/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: tokens.access_token ?? '' }),
      });
      const info = (await intro.json()) as Record<string, unknown>;
      expect(info.active).toBe(true);
      expect(String(info.scope).split(' ').sort()).toEqual(['offline_access', 'openid', 'profile']);
      expect(info.aud).toEqual(['https://api.example.com']);

      // Logout through the browser: the confirmation page, then the client's post-logout URI.
      const logout = new URL('/oauth2/sessions/logout', t.publicUrl);
      logout.search = new URLSearchParams({
        id_token_hint: tokens.id_token ?? '',
        post_logout_redirect_uri: `${rpUrl}/logged-out`,
        state: 'bye',
      }).toString();
      await page.goto(logout.toString());
      expect(new URL(page.url()).pathname).toBe('/dev/logout');
      expect(await page.locator('main').textContent()).toContain('ada@example.com');
      await page.screenshot({ path: `${ARTIFACTS}dev-logout.png`, fullPage: true });
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((u) => u.pathname === '/logged-out');
      expect(new URL(page.url()).searchParams.get('state')).toBe('bye');

      // Signed out: a new login shows the form again instead of skipping it.
      await page.goto(authUrl(c, pkcePair().challenge, randomState()));
      expect(new URL(page.url()).pathname).toBe('/dev/login');
      expect(await page.getByLabel('Password').isVisible()).toBe(true);
    } finally {
      await browser.close();
    }
  });
});
