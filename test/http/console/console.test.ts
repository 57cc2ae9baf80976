/**
 * The operator console (`/console` on the admin listener): sign-in as an OAuth 2.0 client of the
 * server itself (authorization code + PKCE, state, nonce, operators only), the session cookie, CSRF
 * on every POST, and the pages, driven over plain HTTP and by a real headless Chromium (Debian's
 * `chromium` through playwright-core, under the pages' strict CSP) with axe-core checks and
 * screenshots in test-artifacts/.
 */
import { decodeProtectedHeader, exportJWK, generateKeyPair, jwtDecrypt } from 'jose';
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionDigest } from '../../../src/console/sessions.ts';
import { manualClock } from '../../../src/core/clock.ts';
import { keyRing } from '../../../src/core/crypto/keys.ts';
import { startTestServer, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { ARTIFACTS, announceChromium, axeViolations, haveChromium, launchChromium } from '../../helpers/browser.ts';
import { runCli } from '../../helpers/cli.ts';
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

/** The session id inside a jar's sealed console cookie (the test holds the server's secrets). */
async function sessionIdOf(jar: Jar): Promise<string> {
  const token = jar.get('gatehouse_console') ?? '';
  const ring = keyRing(t.container.config.secrets.system, 'console');
  const key = ring.byId(String(decodeProtectedHeader(token).kid));
  if (!key) throw new Error('no key for the console cookie');
  const { payload } = await jwtDecrypt(token, key.key);
  expect(payload.sid).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return String(payload.sid);
}

/** A console page with exactly these cookies (a copied cookie, another browser). */
const consolePage = (cookie: string) => fetch(`${t.adminUrl}/console`, { redirect: 'manual', headers: { cookie } });

/** POSTs a console form with the page's CSRF token. */
const consolePost = (path: string, cookie: string, csrf: string) =>
  fetch(`${t.adminUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({ csrf }),
  });

const expectSentToSignIn = (r: Response) => {
  expect(r.status).toBe(302);
  expect(r.headers.get('location')).toBe('/console/login?return_to=%2Fconsole');
};

describe('console sessions held on the server', () => {
  it('refuses a copied session cookie once its session signed out', async () => {
    const { jar, res } = await signIn('ada@example.com', 'gatehouse-dev');
    const csrf = hidden(await res.text(), 'csrf');
    const copied = cookieHeader(jar);
    expect((await consolePage(copied)).status).toBe(200);
    const out = await consolePost('/console/logout', copied, csrf);
    expect(out.status).toBe(303);
    // The copy still opens (same key, within console.session_ttl), but its session is gone.
    expectSentToSignIn(await consolePage(copied));
    expect((await consolePost('/console/logout', copied, csrf)).status).toBe(401);
  });

  it('signs out everywhere: every session of the operator ends, in every browser', async () => {
    const a = await signIn('ada@example.com', 'gatehouse-dev');
    const b = await signIn('ada@example.com', 'gatehouse-dev');
    const csrfA = hidden(await a.res.text(), 'csrf');
    const cookieA = cookieHeader(a.jar);
    const cookieB = cookieHeader(b.jar);
    expect(cookieA).not.toBe(cookieB);
    expect((await consolePage(cookieB)).status).toBe(200);
    const out = await consolePost('/console/logout-everywhere', cookieA, csrfA);
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/console/signed-out?everywhere=1');
    expect(out.headers.getSetCookie().some((c) => /^gatehouse_console=;/.test(c))).toBe(true);
    expectSentToSignIn(await consolePage(cookieB));
    expectSentToSignIn(await consolePage(cookieA));
    const page = await fetch(`${t.adminUrl}/console/signed-out?everywhere=1`);
    expect(await page.text()).toContain('all your console sessions have ended');
  });

  it('needs the CSRF token to sign out everywhere', async () => {
    const { jar } = await signIn('ada@example.com', 'gatehouse-dev');
    const r = await consolePost('/console/logout-everywhere', cookieHeader(jar), 'forged');
    expect(r.status).toBe(403);
    expect((await consolePage(cookieHeader(jar))).status).toBe(200);
  });

  it('refuses a session whose row expired while its cookie is still within its seal lifetime', async () => {
    const { jar, res } = await signIn('ada@example.com', 'gatehouse-dev');
    const csrf = hidden(await res.text(), 'csrf');
    expect((await consolePage(cookieHeader(jar))).status).toBe(200);
    const db = t.container.db;
    const past = new Date(t.container.clock.now().getTime() - 1000);
    const changed = await db
      .updateTable('console_sessions')
      .set({ expires_at: past })
      .where('id_hash', '=', sessionDigest(await sessionIdOf(jar)))
      .executeTakeFirst();
    expect(Number(changed.numUpdatedRows)).toBe(1);
    expectSentToSignIn(await consolePage(cookieHeader(jar)));
    expect((await consolePost('/console/logout', cookieHeader(jar), csrf)).status).toBe(401);
  });

  it('stores only a digest of the session id, nowhere the id itself', async () => {
    const { jar } = await signIn('ada@example.com', 'gatehouse-dev');
    const sid = await sessionIdOf(jar);
    const db = t.container.db;
    const row = await db
      .selectFrom('console_sessions')
      .selectAll()
      .where('id_hash', '=', sessionDigest(sid))
      .executeTakeFirstOrThrow();
    expect(row.subject).toBe('ada@example.com');
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(t.container.config.console.session_ttl);
    const tables = await sql<{ t: string }>`select table_name as t from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE'`.execute(db);
    expect(tables.rows.map((r) => r.t)).toContain('console_sessions');
    for (const { t: table } of tables.rows) {
      const found = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} x
        where strpos(x::text, ${sid}) > 0`.execute(db);
      expect(found.rows[0]?.n, table).toBe(0);
    }
  });

  it('deletes expired sessions at sign-in', async () => {
    const db = t.container.db;
    const now = t.container.clock.now();
    const old = new Date(now.getTime() - 2 * 3600_000);
    await db
      .insertInto('console_sessions')
      .values({
        id_hash: 'expired-session',
        subject: 'ada@example.com',
        created_at: old,
        last_seen_at: old,
        expires_at: new Date(now.getTime() - 1000),
      })
      .execute();
    await signIn('ada@example.com', 'gatehouse-dev');
    const left = await db.selectFrom('console_sessions').select('id_hash').where('id_hash', '=', 'expired-session');
    expect(await left.execute()).toEqual([]);
  });

  it('ends an operator’s sessions from the CLI (gatehouse revoke console-sessions), and only theirs', {
    timeout: 60_000,
  }, async () => {
    const db = t.container.db;
    const now = t.container.clock.now();
    await db
      .insertInto('console_sessions')
      .values({
        id_hash: 'someone-else',
        subject: 'carol@example.com',
        created_at: now,
        last_seen_at: now,
        expires_at: new Date(now.getTime() + 3600_000),
      })
      .execute();
    const a = await signIn('ada@example.com', 'gatehouse-dev');
    const b = await signIn('ada@example.com', 'gatehouse-dev');
    const r = await runCli(['revoke', 'console-sessions', '--subject', 'ada@example.com', t.database.url, '--json'], {
      SECRETS_SYSTEM: TEST_SECRET,
    });
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout).deleted).toBeGreaterThanOrEqual(2);
    expectSentToSignIn(await consolePage(cookieHeader(a.jar)));
    expectSentToSignIn(await consolePage(cookieHeader(b.jar)));
    const rows = await db.selectFrom('console_sessions').select(['id_hash', 'subject']).execute();
    expect(rows).toEqual([{ id_hash: 'someone-else', subject: 'carol@example.com' }]);
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
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL((u) => u.pathname === '/console/signed-out');
      expect(await page.getByRole('status').textContent()).toContain('You are signed out of the console.');
      expect(await axeViolations(page)).toEqual([]);
      expect(cspErrors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('signs out everywhere with the header’s button: another browser’s session ends too', async () => {
    const browser = await launchChromium();
    try {
      // Two browser contexts: two cookie jars, as two browsers.
      const one = await (await browser.newContext()).newPage();
      const two = await (await browser.newContext()).newPage();
      const csp = watchCsp(one);
      await browserSignIn(one);
      await browserSignIn(two);
      await one.getByRole('button', { name: 'Sign out everywhere' }).focus();
      await shot(one, 'console-sign-out-everywhere');
      await one.getByRole('button', { name: 'Sign out everywhere' }).click();
      await one.waitForURL((u) => u.pathname === '/console/signed-out');
      expect(await one.getByRole('status').textContent()).toContain('all your console sessions have ended');
      expect(await axeViolations(one)).toEqual([]);
      await two.goto(`${t.adminUrl}/console/clients`);
      expect(new URL(two.url()).pathname).toBe('/dev/login');
      expect(csp).toEqual([]);
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
