/**
 * The page a setup link opens (`/setup/<token>`): the overview and the directory form, creation,
 * the SCIM base URL and the secret behind a POST, the provider's steps, the connection panel, the
 * secret's rotation, Google's authorization step; refusals (unknown, expired, CSRF, origin, another
 * tenant's directory) as HTML pages; then the whole walk in Chromium with and without JavaScript,
 * axe-core clean, with screenshots.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { ARTIFACTS, announceChromium, axeViolations, haveChromium, launchChromium } from '../../helpers/browser.ts';
import { startDsyncServer, v1 } from '../../helpers/dsync.ts';

announceChromium('setup page');

let s: TestServer;
beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

let tenants = 0;
/** A fresh setup link (its own tenant), as the management API gives it. */
async function newLink(): Promise<{ url: string; token: string; tenant: string; setupID: string }> {
  const tenant = `setup-page-${++tenants}`;
  const r = await v1(s)('POST', '/setuplinks', {
    tenant,
    product: 'CRM',
    name: 'Acme directory',
    webhook_url: 'https://app.example.com/hook',
    webhook_secret: 'app-secret',
  });
  expect(r.status).toBe(201);
  const url = r.body.data.url as string;
  return { url, token: url.split('/').pop() as string, tenant, setupID: r.body.data.setupID };
}

interface Page {
  status: number;
  html: string;
  headers: Headers;
}

async function get(url: string): Promise<Page> {
  const r = await fetch(url, { redirect: 'manual' });
  return { status: r.status, html: await r.text(), headers: r.headers };
}

async function post(url: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Page> {
  const r = await fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(url).origin, ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: r.status, html: await r.text(), headers: r.headers };
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');

/** Creates a directory through the page; returns its page's URL and the page. */
async function createThrough(link: { url: string }, fields: Record<string, string>) {
  const home = await get(link.url);
  const r = await post(`${link.url}/directories`, { csrf: csrfOf(home.html), ...fields });
  expect(r.status).toBe(303);
  const location = new URL(r.headers.get('location') as string, link.url).toString();
  return { location, page: await get(location) };
}

describe('the setup page over HTTP', () => {
  it('answers the link’s URL with the page: strict CSP, no referrer, the product and the providers', async () => {
    const link = await newLink();
    const p = await get(link.url);
    expect(p.status).toBe(200);
    expect(p.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = p.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'nonce-[^']+'/);
    expect(csp).toContain(`form-action ${new URL(link.url).origin}`);
    expect(csp).not.toContain('unsafe-inline');
    expect(p.headers.get('referrer-policy')).toBe('no-referrer');
    expect(p.headers.get('cache-control')).toBe('no-store');
    const t = text(p.html);
    expect(t).toContain('CRM');
    for (const name of [
      'Okta',
      'Microsoft Entra ID',
      'OneLogin',
      'JumpCloud',
      'Google Workspace',
      'Another identity provider',
    ])
      expect(t).toContain(name);
    expect(t).toContain('No directory yet');
    // The tenant is the application's business: the page does not show it (as Jackson's setup API).
    expect(t).not.toContain(link.tenant);
  });

  it('refuses an unknown, revoked or expired link with an HTML page', async () => {
    const unknown = await get(`${s.publicUrl}/setup/not-a-token`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/^text\/html/);
    expect(text(unknown.html)).toContain('does not exist, or it was revoked');

    const link = await newLink();
    await sql`update dsync_setup_links set valid_till = now() - interval '1 minute' where id = ${link.setupID}`.execute(
      s.container.db,
    );
    const expired = await get(link.url);
    expect(expired.status).toBe(401);
    expect(text(expired.html)).toContain('This setup link has expired');

    const revoked = await newLink();
    await v1(s)('DELETE', `/setuplinks?id=${revoked.setupID}`);
    expect((await get(revoked.url)).status).toBe(404);
  });

  it('creates a directory with the link’s tenant and product; the secret only in the answer to a POST', async () => {
    const link = await newLink();
    const { location, page } = await createThrough(link, { type: 'okta-scim-v2' });
    expect(page.status).toBe(200);
    const id = location.split('/').pop()?.split('?')[0] as string;
    const d = (await v1(s)('GET', `/${id}`)).body.data;
    expect(d).toMatchObject({ tenant: link.tenant, product: 'CRM', type: 'okta-scim-v2', name: 'Acme directory' });
    const t = text(page.html);
    expect(t).toContain('The directory was created');
    expect(t).toContain(d.scim.endpoint);
    expect(t).toContain('SCIM connector base URL'); // Okta's steps
    expect(page.html).not.toContain(d.scim.secret);
    const revealed = await post(`${location.split('?')[0]}/reveal`, { csrf: csrfOf(page.html) });
    expect(revealed.status).toBe(200);
    expect(revealed.html).toContain(d.scim.secret);
    expect(revealed.headers.get('cache-control')).toBe('no-store');
    // The overview lists it.
    expect(text((await get(link.url)).html)).toContain('Acme directory');
  });

  it('refuses a form without the link’s CSRF token, from another origin, or of another link', async () => {
    const link = await newLink();
    const other = await newLink();
    const csrf = csrfOf((await get(link.url)).html);
    const none = await post(`${link.url}/directories`, { type: 'okta-scim-v2' });
    expect(none.status).toBe(403);
    expect(none.headers.get('content-type')).toMatch(/^text\/html/);
    expect(
      (await post(`${link.url}/directories`, { type: 'okta-scim-v2', csrf }, { origin: 'https://evil.example' }))
        .status,
    ).toBe(403);
    expect((await post(`${other.url}/directories`, { type: 'okta-scim-v2', csrf })).status).toBe(403);
    expect((await post(`${link.url}/directories`, { type: 'nope', csrf })).status).toBe(400);
    expect((await v1(s)('GET', `/?tenant=${link.tenant}&product=CRM`)).body.data).toEqual([]);
  });

  it('shows the connection: nothing yet, then the last request, counts, last change and last refusal', async () => {
    const link = await newLink();
    const { location, page } = await createThrough(link, { type: 'azure-scim-v2' });
    expect(text(page.html)).toContain('No request received yet.');
    expect(text(page.html)).toContain('?aadOptscim062020'); // Entra's base URL and steps
    const id = location.split('/').pop()?.split('?')[0] as string;
    const d = (await v1(s)('GET', `/${id}`)).body.data;
    const scim = (method: string, path: string, body?: unknown) =>
      fetch(`${s.publicUrl}${d.scim.path.split('?')[0]}${path}`, {
        method,
        headers: { authorization: `Bearer ${d.scim.secret}`, 'content-type': 'application/scim+json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await scim('POST', '/Users', { userName: 'ada@acme.example' })).status).toBe(201);
    expect((await scim('POST', '/Groups', { displayName: 'Engineering' })).status).toBe(201);
    expect((await scim('POST', '/Users', { userName: 'ada@acme.example' })).status).toBe(409);
    const panel = await eventually(async () => {
      const t = text((await get(location.split('?')[0] as string)).html);
      return t.includes('User already exists') ? t : undefined;
    });
    expect(panel).toMatch(/Users 1 Groups 1/);
    expect(panel).toContain('group.created');
    expect(panel).toMatch(/409 User already exists/);
    expect(panel).not.toContain('No request received yet.');
  });

  it('rotates the secret after a confirmation: the old one stops working, the new one is shown once', async () => {
    const link = await newLink();
    const { location, page } = await createThrough(link, { type: 'generic-scim-v2' });
    const here = location.split('?')[0] as string;
    const id = here.split('/').pop() as string;
    const before = (await v1(s)('GET', `/${id}`)).body.data;
    const unconfirmed = await post(`${here}/rotate`, { csrf: csrfOf(page.html) });
    expect(text(unconfirmed.html)).toContain('Tick the box');
    expect((await v1(s)('GET', `/${id}`)).body.data.scim.secret).toBe(before.scim.secret);
    const rotated = await post(`${here}/rotate`, { csrf: csrfOf(page.html), confirm: 'yes' });
    const after = (await v1(s)('GET', `/${id}`)).body.data;
    expect(after.scim.secret).not.toBe(before.scim.secret);
    expect(rotated.html).toContain(after.scim.secret);
    const users = (secret: string) =>
      fetch(`${s.publicUrl}${before.scim.path}/Users`, { headers: { authorization: `Bearer ${secret}` } });
    expect((await users(before.scim.secret)).status).toBe(401);
    expect((await users(after.scim.secret)).status).toBe(200);
  });

  it('gives Google Workspace its authorization step, and keeps other tenants’ directories unknown', async () => {
    const link = await newLink();
    const { location, page } = await createThrough(link, { type: 'google', google_domain: 'acme.example' });
    const t = text(page.html);
    expect(t).toContain('Authorize with Google');
    expect(t).toContain('acme.example');
    expect(t).not.toContain('Reveal the bearer secret');
    const id = location.split('/').pop()?.split('?')[0] as string;
    expect(page.html).toContain(`directoryId=${id}`);
    const other = await newLink();
    const foreign = await get(`${other.url}/directories/${id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe('behind a proxy (dsync.external_url is not this listener)', () => {
  let proxied: TestServer;
  const EXTERNAL = 'https://sso.example.com';
  beforeAll(async () => {
    proxied = await startDsyncServer({ 'dsync.external_url': EXTERNAL });
  });
  afterAll(async () => {
    await proxied?.close();
  });

  it('lets forms post to the external origin and accepts POSTs from it', async () => {
    const r = await v1(proxied)('POST', '/setuplinks', {
      tenant: 'proxied',
      product: 'CRM',
      webhook_url: 'https://app.example.com/hook',
      webhook_secret: 'app-secret',
    });
    const url = r.body.data.url as string;
    expect(url.startsWith(`${EXTERNAL}/setup/`)).toBe(true);
    // What the proxy forwards: the same path on this listener.
    const local = `${proxied.publicUrl}${new URL(url).pathname}`;
    const page = await get(local);
    expect(page.headers.get('content-security-policy')).toContain(`form-action ${EXTERNAL} `);
    const created = await post(
      `${local}/directories`,
      { csrf: csrfOf(page.html), type: 'okta-scim-v2' },
      { origin: EXTERNAL },
    );
    expect(created.status).toBe(303);
    expect(
      (
        await post(
          `${local}/directories`,
          { csrf: csrfOf(page.html), type: 'okta-scim-v2' },
          { origin: 'https://evil.example' },
        )
      ).status,
    ).toBe(403);
  });
});

describe.skipIf(!haveChromium)('the setup page in Chromium', () => {
  it('walks from the link to the secret with the keyboard and mouse, axe-core clean, with and without JavaScript', async () => {
    const browser = await launchChromium();
    try {
      for (const javaScriptEnabled of [true, false]) {
        const link = await newLink();
        const context = await browser.newContext({ javaScriptEnabled });
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') errors.push(m.text());
        });
        const check = async (name: string) => {
          // axe-core runs in the page: with JavaScript off, the same HTML was checked in the first pass.
          if (javaScriptEnabled) expect(await axeViolations(page), name).toEqual([]);
          await page.screenshot({
            path: `${ARTIFACTS}setup-page-${name}${javaScriptEnabled ? '' : '-nojs'}.png`,
            fullPage: true,
          });
        };
        await page.goto(link.url);
        expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Set up directory sync');
        await check('overview');
        await page.getByLabel('Okta').check();
        await page.getByRole('button', { name: 'Create the directory' }).click();
        await page.waitForURL((u) => u.pathname.includes('/directories/'));
        expect(await page.getByRole('status').textContent()).toContain('The directory was created');
        expect(await page.getByRole('heading', { name: 'Connection', exact: true }).count()).toBe(1);
        await check('directory');
        await page.getByRole('button', { name: 'Reveal the bearer secret' }).click();
        await page.waitForLoadState();
        const secret = await page.locator('#scim-secret').textContent();
        expect(secret).toMatch(/^\S{16,}$/);
        // The copy buttons appear with JavaScript only.
        expect(await page.locator('button[data-copy="scim-secret"]').isVisible()).toBe(javaScriptEnabled);
        await check('secret');
        expect(errors).toEqual([]);
        await context.close();
      }
    } finally {
      await browser.close();
    }
  });
});
