/**
 * The operator console (`/console` on the admin listener): sign-in as an OAuth 2.0 client of the
 * server itself (authorization code + PKCE, state, nonce, operators only), the session cookie, CSRF
 * on every POST, and the pages, driven over plain HTTP and by a real headless Chromium (Debian's
 * `chromium` through playwright-core, under the pages' strict CSP) with axe-core checks and
 * screenshots in test-artifacts/.
 */
import { exportJWK, generateKeyPair } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { ARTIFACTS, announceChromium, axeViolations, haveChromium, launchChromium } from '../../helpers/browser.ts';
import { consoleSignIn, cookieHeader, hidden, type Jar, keep } from '../../helpers/console.ts';
import type { JsonBody } from '../../helpers/json.ts';

announceChromium('console');

const USERS = [
  { subject: 'ada@example.com', password: 'gatehouse-dev', claims: { name: 'Ada Lovelace' } },
  { subject: 'bob@example.com', password: 'bob-password', claims: { name: 'Bob' } },
];

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({
    overrides: {
      'dev_ui.enabled': true,
      'dev_ui.users': USERS,
      'console.operators': ['ada@example.com'],
      'audit.enabled': true,
    },
  });
});
afterAll(async () => {
  await t?.close();
});

/** Signs `subject` in through the development login page over HTTP; returns the last page. */
async function signIn(
  subject: string,
  password: string,
  jar: Jar = new Map(),
  start = '/console?from=test',
  srv: TestServer = t,
) {
  const done = await consoleSignIn(srv, subject, password, jar, start);
  expect(new URL(done.first).pathname).toBe('/dev/login');
  return done;
}

describe('console sign-in over HTTP', () => {
  it('sends a visitor without a session to the authorization endpoint with PKCE S256, state and nonce', async () => {
    const r = await fetch(`${t.adminUrl}/console?x=1`, { redirect: 'manual' });
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe(`/console/login?return_to=${encodeURIComponent('/console?x=1')}`);
    const login = await fetch(`${t.adminUrl}/console/login`, { redirect: 'manual' });
    expect(login.status).toBe(302);
    const to = new URL(login.headers.get('location') ?? '');
    expect(to.origin).toBe(t.publicUrl);
    expect(to.pathname).toBe('/oauth2/auth');
    expect(to.searchParams.get('client_id')).toBe('gatehouse-console');
    expect(to.searchParams.get('redirect_uri')).toBe(`${t.adminUrl}/console/callback`);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(to.searchParams.get('state')?.length).toBeGreaterThanOrEqual(32);
    expect(to.searchParams.get('nonce')?.length).toBeGreaterThanOrEqual(32);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith('gatehouse_console_signin='));
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/samesite=lax/i);
    expect(cookie).toMatch(/path=\/console/i);
  });

  it('signs an operator in (session cookie HttpOnly, SameSite=Lax) and returns to the page asked for', async () => {
    const { url, res, jar } = await signIn('ada@example.com', 'gatehouse-dev');
    expect(url).toBe(`${t.adminUrl}/console?from=test`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'nonce-/);
    const html = await res.text();
    expect(html).toContain('Signed in as <strong>ada@example.com</strong>');
    expect(jar.has('gatehouse_console')).toBe(true);
    expect(jar.has('gatehouse_console_signin')).toBe(false);
  });

  it('returns only to a page of the console after sign-in', async () => {
    for (const target of ['https://evil.example/', '//evil.example/console', '/admin/clients', '/consolex']) {
      const { url } = await signIn(
        'ada@example.com',
        'gatehouse-dev',
        new Map(),
        `/console/login?return_to=${encodeURIComponent(target)}`,
      );
      expect(url, target).toBe(`${t.adminUrl}/console`);
    }
  });

  it('refuses a subject that is not an operator', async () => {
    const { url, res, jar } = await signIn('bob@example.com', 'bob-password');
    expect(new URL(url).pathname).toBe('/console/callback');
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('bob@example.com, which is not a console operator');
    expect(jar.has('gatehouse_console')).toBe(false);
  });

  it('refuses a callback whose state does not match the sign-in', async () => {
    const jar: Jar = new Map();
    const login = await fetch(`${t.adminUrl}/console/login`, { redirect: 'manual' });
    keep(jar, login);
    const r = await fetch(`${t.adminUrl}/console/callback?code=abc&state=forged`, {
      headers: { cookie: cookieHeader(jar) },
    });
    expect(r.status).toBe(400);
    expect(await r.text()).toContain('state mismatch');
    // Without any sign-in cookie too.
    const bare = await fetch(`${t.adminUrl}/console/callback?code=abc&state=x`);
    expect(bare.status).toBe(400);
  });

  it('refuses a POST without the session’s CSRF token, and a forged session cookie', async () => {
    const { jar, res } = await signIn('ada@example.com', 'gatehouse-dev');
    const csrf = hidden(await res.text(), 'csrf');
    expect(csrf).not.toBe('');
    const post = (fields: Record<string, string>, cookie = cookieHeader(jar)) =>
      fetch(`${t.adminUrl}/console/logout`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams(fields),
      });
    const forged = await post({ csrf: 'forged' });
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain('CSRF check failed');
    const noSession = await post({ csrf }, 'gatehouse_console=eyJhbGciOiJkaXIifQ..x.y.z');
    expect(noSession.status).toBe(401);
    const ok = await post({ csrf });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/console/signed-out');
    expect(ok.headers.getSetCookie().some((c) => /^gatehouse_console=;/.test(c))).toBe(true);
  });

  it('keeps its own client as it is when it is already right, and repairs it when it drifted', async () => {
    await signIn('ada@example.com', 'gatehouse-dev');
    const read = async () => (await (await fetch(`${t.adminUrl}/admin/clients/gatehouse-console`)).json()) as JsonBody;
    const before = await read();
    const writes = async () =>
      (
        (await (
          await fetch(`${t.adminUrl}/admin/audit/events?target=gatehouse-console&target_kind=client&page_size=100`)
        ).json()) as unknown[]
      ).length;
    const writesBefore = await writes();
    expect(writesBefore).toBeGreaterThan(0);
    expect(before.redirect_uris).toEqual([`${t.adminUrl}/console/callback`]);
    expect(before.skip_consent).toBe(true);
    expect(before.client_secret).toBeUndefined();
    // Other processes of the same deployment (same database, same URLs).
    const overrides = {
      'dev_ui.enabled': true,
      'dev_ui.users': USERS,
      'console.operators': ['ada@example.com'],
      'audit.enabled': true,
      'urls.self.issuer': `${t.publicUrl}/`,
      'urls.self.admin': `${t.adminUrl}/`,
    };
    const second = await startTestServer({ database: t.database, overrides });
    try {
      expect((await fetch(`${second.adminUrl}/console/login`, { redirect: 'manual' })).status).toBe(302);
      expect((await read()).updated_at).toBe(before.updated_at);
      expect(await writes()).toBe(writesBefore);
    } finally {
      await second.close();
    }
    // Someone changed it through the admin API: the next process to sign someone in puts it right.
    const patch = await fetch(`${t.adminUrl}/admin/clients/gatehouse-console`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ op: 'replace', path: '/redirect_uris', value: ['https://evil.example/cb'] }]),
    });
    expect(patch.status).toBe(200);
    const third = await startTestServer({ database: t.database, overrides });
    try {
      expect((await fetch(`${third.adminUrl}/console/login`, { redirect: 'manual' })).status).toBe(302);
      expect((await read()).redirect_uris).toEqual([`${t.adminUrl}/console/callback`]);
      expect(await writes()).toBeGreaterThan(writesBefore + 1);
    } finally {
      await third.close();
    }
  });

  it('ends a session after console.session_ttl', async () => {
    const clock = manualClock();
    const short = await startTestServer({
      clock,
      overrides: { 'dev_ui.enabled': true, 'console.session_ttl': '5m' },
    });
    try {
      const { url, jar } = await signIn('ada@example.com', 'gatehouse-dev', new Map(), '/console', short);
      expect(url).toBe(`${short.adminUrl}/console`);
      const page = () =>
        fetch(`${short.adminUrl}/console`, { redirect: 'manual', headers: { cookie: cookieHeader(jar) } });
      clock.advance(4 * 60_000);
      expect((await page()).status).toBe(200);
      clock.advance(2 * 60_000);
      const expired = await page();
      expect(expired.status).toBe(302);
      expect(expired.headers.get('location')).toBe('/console/login?return_to=%2Fconsole');
    } finally {
      await short.close();
    }
  });

  it('is not served when no operator is configured', async () => {
    const lone = await startTestServer({ overrides: { 'dev_ui.enabled': false } });
    try {
      expect(lone.container.config.console.enabled).toBe(false);
      expect((await fetch(`${lone.adminUrl}/console`, { redirect: 'manual' })).status).toBe(404);
    } finally {
      await lone.close();
    }
  });
});

describe.skipIf(!haveChromium)('console in a real browser (Chromium)', () => {
  it('signs an operator in through the login page, shows the overview, and signs out', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const cspErrors: string[] = [];
      page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
      });
      await page.goto(`${t.adminUrl}/console`);
      expect(new URL(page.url()).pathname).toBe('/dev/login');
      await page.getByLabel('User (subject)').fill('ada@example.com');
      await page.getByLabel('Password').fill('gatehouse-dev');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/console');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
      expect(await page.getByRole('img', { name: /Tokens issued/ }).count()).toBe(1);
      expect(await page.getByRole('link', { name: 'Overview' }).getAttribute('aria-current')).toBe('page');
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: `${ARTIFACTS}console-overview.png`, fullPage: true });
      // Keyboard: the first Tab reaches the skip link, which moves focus to the main content.
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((u) => u.pathname === '/console/signed-out');
      expect(await page.getByRole('status').textContent()).toContain('You are signed out of the console.');
      expect(await axeViolations(page)).toEqual([]);
      expect(cspErrors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

/** Signs ada in through the browser (the development login page) and lands on `path`. */
async function browserSignIn(page: Page, path = '/console') {
  await page.goto(`${t.adminUrl}${path}`);
  await page.getByLabel('User (subject)').fill('ada@example.com');
  await page.getByLabel('Password').fill('gatehouse-dev');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname === path);
}

/** Records CSP violations the page reports (none may happen: every page runs under its real policy). */
function watchCsp(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) errors.push(m.text());
  });
  return errors;
}

async function shot(page: Page, name: string) {
  expect(await axeViolations(page), name).toEqual([]);
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}

const clientCredentials = (id: string, secret: string) =>
  fetch(`${t.publicUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials' }),
  });

describe.skipIf(!haveChromium)('console OAuth 2.0 pages in a real browser (Chromium)', () => {
  it('creates a client, finds it, edits it, rotates its secret and deletes it, each destructive step confirmed', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const csp = watchCsp(page);
      await browserSignIn(page, '/console/clients');
      await shot(page, 'console-clients-empty');
      await page.getByRole('link', { name: 'Create a client' }).click();
      await shot(page, 'console-client-new');
      await page.getByLabel('Name').fill('Billing <App> & Co');
      await page.getByLabel(/^Redirect URIs/).fill('https://billing.example.com/callback');
      await page.getByRole('checkbox', { name: 'client_credentials' }).check();
      await page.getByRole('button', { name: 'Create client' }).click();
      await page.getByRole('heading', { name: 'Client Billing <App> & Co' }).waitFor();
      const id = (await page.locator('#client-id').textContent()) ?? '';
      const secret = (await page.locator('#client-secret').textContent()) ?? '';
      expect(secret.length).toBeGreaterThan(20);
      expect(await page.getByRole('button', { name: /Copy client secret/ }).isVisible()).toBe(true);
      await shot(page, 'console-client-created');
      expect((await clientCredentials(id, secret)).status).toBe(200);

      // The list, with search.
      await page.getByRole('navigation').getByRole('link', { name: 'OAuth2 clients' }).click();
      await page.getByLabel('Search by name or client id').fill('billing');
      await page.getByRole('button', { name: 'Search' }).click();
      expect(await page.getByRole('link', { name: 'Billing <App> & Co' }).count()).toBe(1);
      await shot(page, 'console-clients');
      await page.getByLabel('Search by name or client id').fill('no-such-client');
      await page.getByRole('button', { name: 'Search' }).click();
      expect(await page.getByText('No client matches.').count()).toBe(1);
      await page.goto(`${t.adminUrl}/console/clients/${encodeURIComponent(id)}`);

      // Edit.
      await page.getByRole('link', { name: 'Edit' }).click();
      await shot(page, 'console-client-edit');
      await page.getByLabel('Name').fill('Billing v2');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('status').filter({ hasText: 'The client was saved.' }).waitFor();
      expect(await page.locator('dl').textContent()).toContain('https://billing.example.com/callback');
      expect(await page.locator('dl').textContent()).toContain('client_credentials');

      // Rotate the secret: a confirmation page first.
      await page.getByRole('link', { name: 'Rotate secret' }).click();
      expect(await page.getByText('The current secret stops working at once').count()).toBe(1);
      await shot(page, 'console-client-rotate-confirm');
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('status').filter({ hasText: 'A new secret was generated' }).waitFor();
      const rotated = (await page.locator('#client-secret').textContent()) ?? '';
      expect(rotated).not.toBe(secret);
      expect((await clientCredentials(id, secret)).status).toBe(401);
      expect((await clientCredentials(id, rotated)).status).toBe(200);

      // Delete, confirmed; Cancel first goes back without deleting.
      await page.goto(`${t.adminUrl}/console/clients/${encodeURIComponent(id)}`);
      await page.getByRole('link', { name: 'Delete' }).click();
      await page.getByRole('link', { name: 'Cancel' }).click();
      await page.waitForURL((u) => u.pathname === `/console/clients/${id}`);
      await page.getByRole('link', { name: 'Delete' }).click();
      await shot(page, 'console-client-delete-confirm');
      await page.getByRole('button', { name: 'Delete client' }).click();
      await page.getByRole('status').filter({ hasText: 'The client was deleted.' }).waitFor();
      expect((await fetch(`${t.adminUrl}/admin/clients/${encodeURIComponent(id)}`)).status).toBe(404);
      expect(csp).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('adds and rotates keys, shows and revokes a subject’s sessions, adds and deletes a trusted issuer', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const csp = watchCsp(page);
      await browserSignIn(page, '/console/keys');
      await page.getByLabel('Key set').fill('console.test');
      await page.getByLabel('Algorithm').selectOption('ES256');
      await page.getByLabel(/^Key id/).fill('first-key');
      await page.getByRole('button', { name: 'Add key' }).click();
      await page.getByRole('status').filter({ hasText: 'The key was added' }).waitFor();
      await page.getByRole('button', { name: 'Rotate: generate a new signing key' }).click();
      await page.getByRole('status').filter({ hasText: 'A new key was generated' }).waitFor();
      const rows = page.locator('tbody tr');
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(1).textContent()).toContain('first-key');
      expect(await rows.nth(0).textContent()).toContain('ES256');
      await shot(page, 'console-keys');
      const set = (await (await fetch(`${t.adminUrl}/admin/keys/console.test`)).json()) as { keys: { kid: string }[] };
      expect(set.keys).toHaveLength(2);
      // Deleting a key asks first.
      await rows.nth(1).getByRole('button', { name: 'Delete…' }).click();
      expect(await page.getByText('Delete the key first-key from console.test?').count()).toBe(1);
      await page.getByRole('button', { name: 'Delete key' }).click();
      await page.getByRole('status').filter({ hasText: 'The key was deleted.' }).waitFor();
      const after = (await (await fetch(`${t.adminUrl}/admin/keys/console.test`)).json()) as {
        keys: { kid: string }[];
      };
      expect(after.keys.map((k) => k.kid)).not.toContain('first-key');
      expect(after.keys).toHaveLength(1);
      expect(await page.getByRole('link', { name: 'console.test' }).count()).toBe(1);

      // Sessions: ada has a login session (this sign-in was not remembered: none) and the console's consent.
      await page.getByRole('navigation').getByRole('link', { name: 'Sessions' }).click();
      await page.getByLabel('Subject').fill('ada@example.com');
      await page.getByRole('button', { name: 'Show sessions' }).click();
      await shot(page, 'console-sessions');
      await page.getByRole('button', { name: 'Revoke all consent sessions…' }).click();
      expect(await page.getByText('Revoke every consent session of ada@example.com?').count()).toBe(1);
      await shot(page, 'console-sessions-confirm');
      await page.getByRole('button', { name: 'Revoke consent sessions' }).click();
      await page.getByRole('status').filter({ hasText: 'The sessions were revoked.' }).waitFor();

      // Trust.
      const { publicKey } = await generateKeyPair('ES256');
      const jwk = { ...(await exportJWK(publicKey)), kid: 'partner-key', alg: 'ES256', use: 'sig' };
      await page.getByRole('navigation').getByRole('link', { name: 'Trust' }).click();
      await page.getByLabel('Issuer').fill('https://partner.example.com');
      await page.getByLabel(/^Subject/).fill('svc-billing');
      await page.getByLabel(/^Scope/).fill('read write');
      await page.getByLabel('Public key (JWK, JSON)').fill(JSON.stringify(jwk));
      await page.getByLabel(/^Expires at/).fill('2099-01-01T00:00:00Z');
      await page.getByRole('button', { name: 'Add trust relationship' }).click();
      await page.getByRole('status').filter({ hasText: 'The trust relationship was added.' }).waitFor();
      expect(await page.locator('tbody').textContent()).toContain('https://partner.example.com');
      await shot(page, 'console-trust');
      await page.getByRole('button', { name: 'Delete…' }).click();
      await page.getByRole('button', { name: 'Delete trust relationship' }).click();
      await page.getByRole('status').filter({ hasText: 'The trust relationship was deleted.' }).waitFor();
      expect(await page.getByText('No trust relationships.').count()).toBe(1);
      expect(csp).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('shows a service error (an invalid trusted key) as an error page, not a 500', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await browserSignIn(page, '/console/trust');
      await page.getByLabel('Issuer').fill('https://partner.example.com');
      await page.getByLabel(/^Subject/).fill('x');
      await page.getByLabel('Public key (JWK, JSON)').fill('{not json');
      await page.getByLabel(/^Expires at/).fill('2099-01-01T00:00:00Z');
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.getByRole('button', { name: 'Add trust relationship' }).click(),
      ]);
      expect(res.status()).toBe(400);
      expect(await page.getByRole('alert').textContent()).toContain('The public key is not valid JSON.');
      await shot(page, 'console-error');
    } finally {
      await browser.close();
    }
  });
});
