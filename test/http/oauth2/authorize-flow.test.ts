import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  adminApi,
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

let t: TestServer;
let client: CreatedClient;

beforeAll(async () => {
  // `plain` PKCE is off by default (as in Hydra); the PKCE test below checks it with it on.
  t = await startTestServer({ overrides: { 'oauth2.pkce.allow_plain': true } });
  client = await createClient(t);
});
afterAll(() => t?.close());

const params = (over: Record<string, string> = {}) => ({
  client_id: client.client_id,
  response_type: 'code',
  redirect_uri: CB,
  scope: 'openid offline',
  state: randomState(),
  ...over,
});

const remember = {
  login: (r: { skip: boolean; subject: string }) => ({ subject: r.skip ? r.subject : 'alice', remember: true }),
};
const rememberConsent = {
  ...remember,
  consent: (q: { requested_scope: string[] }) => ({ grant_scope: q.requested_scope, remember: true }),
};

describe('the authorization-code flow through login and consent', () => {
  it('issues a code at the client redirect (303) with scope and state, and tokens for it', async () => {
    const p = params();
    const r = await runFlow(t, new Browser(), authorizeUrl(t, p));
    expect(r.final.startsWith(CB)).toBe(true);
    expect(param(r.final, 'state')).toBe(p.state);
    expect(param(r.final, 'scope')).toBe('openid offline');
    const code = param(r.final, 'code') as string;
    expect(code).toMatch(/^ory_ac_/);
    const tok = await exchangeCode(t, client, code);
    expect(tok.status).toBe(200);
    expect(tok.res.headers.get('cache-control')).toBe('no-store');
    expect(tok.res.headers.get('pragma')).toBe('no-cache');
    expect(tok.res.headers.get('content-type')).toBe('application/json;charset=UTF-8');
    expect(tok.body).toMatchObject({ token_type: 'bearer', scope: 'openid offline' });
    expect(tok.body.access_token).toMatch(/^ory_at_/);
    expect(tok.body.refresh_token).toMatch(/^ory_rt_/);
    expect(typeof tok.body.id_token).toBe('string');
    const ui = await fetch(`${t.publicUrl}/userinfo`, {
      headers: { authorization: `Bearer ${tok.body.access_token}` },
    });
    expect(ui.status).toBe(200);
    expect(await ui.json()).toMatchObject({ sub: 'alice', aud: [client.client_id] });
  });

  it('handles prompt=select_account like login: the login screen with skip=false, never invalid_request', async () => {
    const b = new Browser();
    await runFlow(t, b, authorizeUrl(t, params()), remember);
    const again = await runFlow(t, b, authorizeUrl(t, params()), remember);
    expect(again.loginSeen?.skip).toBe(true);
    const select = await runFlow(t, b, authorizeUrl(t, params({ prompt: 'select_account' })), remember);
    expect(select.loginSeen).toEqual({ skip: false, subject: '' });
    expect(param(select.final, 'error')).toBeNull();
    expect(param(select.final, 'code')).toMatch(/^ory_ac_/);
  });

  it('answers prompt=none without a session with login_required at the redirect URI', async () => {
    const p = params({ prompt: 'none' });
    const step = await new Browser().get(authorizeUrl(t, p));
    expect(step.status).toBe(303);
    expect(step.location.startsWith(CB)).toBe(true);
    expect(param(step.location, 'error')).toBe('login_required');
    expect(param(step.location, 'state')).toBe(p.state);
  });

  it('answers prompt=none with a remembered login but no remembered consent with consent_required', async () => {
    const b = new Browser();
    await runFlow(t, b, authorizeUrl(t, params()), remember);
    const r = await runFlow(t, b, authorizeUrl(t, params({ prompt: 'none' })), remember);
    expect(param(r.final, 'error')).toBe('consent_required');
  });

  it('completes prompt=none silently once login and consent are remembered', async () => {
    const b = new Browser();
    await runFlow(t, b, authorizeUrl(t, params()), rememberConsent);
    const r = await runFlow(t, b, authorizeUrl(t, params({ prompt: 'none' })), rememberConsent);
    expect(r.loginSeen?.skip).toBe(true);
    expect(r.consentSeen?.skip).toBe(true);
    expect(param(r.final, 'code')).toMatch(/^ory_ac_/);
  });

  it('shows the consent screen again with prompt=consent, and for scopes not granted before', async () => {
    const b = new Browser();
    await runFlow(t, b, authorizeUrl(t, params({ scope: 'openid' })), rememberConsent);
    const same = await runFlow(t, b, authorizeUrl(t, params({ scope: 'openid' })), rememberConsent);
    expect(same.consentSeen?.skip).toBe(true);
    const forced = await runFlow(
      t,
      b,
      authorizeUrl(t, params({ scope: 'openid', prompt: 'consent' })),
      rememberConsent,
    );
    expect(forced.consentSeen?.skip).toBe(false);
    const more = await runFlow(t, b, authorizeUrl(t, params({ scope: 'openid profile' })), rememberConsent);
    expect(more.consentSeen?.skip).toBe(false);
  });

  it('skips consent for skip_consent clients, so prompt=none works without a remembered consent', async () => {
    const trusted = await createClient(t, { skip_consent: true });
    const b = new Browser();
    const p = { ...params(), client_id: trusted.client_id };
    const first = await runFlow(t, b, authorizeUrl(t, p), remember);
    expect(first.consentSeen?.skip).toBe(true);
    const silent = await runFlow(t, b, authorizeUrl(t, { ...p, state: randomState(), prompt: 'none' }), remember);
    expect(param(silent.final, 'code')).toMatch(/^ory_ac_/);
  });

  it('forces a fresh login when max_age has passed, and refuses prompt=none then', async () => {
    const b = new Browser();
    await runFlow(t, b, authorizeUrl(t, params()), remember);
    const fresh = await runFlow(t, b, authorizeUrl(t, params({ max_age: '0' })), remember);
    expect(fresh.loginSeen?.skip).toBe(false);
    const none = await b.get(authorizeUrl(t, params({ max_age: '0', prompt: 'none' })));
    expect(param(none.location, 'error')).toBe('login_required');
    const ok = await runFlow(t, b, authorizeUrl(t, params({ max_age: '3600' })), remember);
    expect(ok.loginSeen?.skip).toBe(true);
  });

  it('passes the OpenID Connect context to the login UI and accepts a form POST', async () => {
    const body = new URLSearchParams(
      params({ login_hint: 'alice@example.com', acr_values: 'urn:a urn:b', ui_locales: 'de en', display: 'page' }),
    );
    const step = await new Browser().get(`${t.publicUrl}/oauth2/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    expect(step.status).toBe(302);
    const challenge = param(step.location, 'login_challenge') as string;
    const { data } = await adminApi(t).getOAuth2LoginRequest({ loginChallenge: challenge });
    expect(data).toMatchObject({
      skip: false,
      subject: '',
      requested_scope: ['openid', 'offline'],
      requested_access_token_audience: [],
      client: { client_id: client.client_id },
      oidc_context: {
        login_hint: 'alice@example.com',
        acr_values: ['urn:a', 'urn:b'],
        ui_locales: ['de', 'en'],
        display: 'page',
        id_token_hint_claims: {},
      },
    });
    expect(data.client).not.toHaveProperty('client_secret');
    expect(new URL(data.request_url).searchParams.get('login_hint')).toBe('alice@example.com');
    expect(data.session_id).toBeTruthy();
  });

  it('sends a rejected login to the client as access_denied', async () => {
    const r = await runFlow(t, new Browser(), authorizeUrl(t, params()), { login: () => false });
    expect(param(r.final, 'error')).toBe('access_denied');
  });

  it('sends a rejected consent to the client with its description', async () => {
    const r = await runFlow(t, new Browser(), authorizeUrl(t, params()), { consent: () => false });
    expect(param(r.final, 'error')).toBe('access_denied');
    expect(param(r.final, 'error_description')).toBe('The resource owner denied the request');
  });

  it('sends unknown clients and unregistered redirect URIs to the error page (302)', async () => {
    const unknown = await new Browser().get(authorizeUrl(t, params({ client_id: 'nope' })));
    expect(unknown.status).toBe(302);
    expect(unknown.location.startsWith(t.container.config.urls.error)).toBe(true);
    expect(param(unknown.location, 'error')).toBe('invalid_client');
    const bad = await new Browser().get(authorizeUrl(t, params({ redirect_uri: 'http://127.0.0.1:9999/other' })));
    expect(bad.status).toBe(302);
    expect(param(bad.location, 'error')).toBe('invalid_request');
    expect(param(bad.location, 'error_description')).toContain('redirect_uri');
  });

  it('answers a short state with invalid_state and a disallowed scope with invalid_scope at the client', async () => {
    const s = await new Browser().get(authorizeUrl(t, params({ state: 'short' })));
    expect(s.status).toBe(303);
    expect(param(s.location, 'error')).toBe('invalid_state');
    const sc = await new Browser().get(authorizeUrl(t, params({ scope: 'openid admin' })));
    expect(param(sc.location, 'error')).toBe('invalid_scope');
  });
});

describe('challenges and verifiers are single-use and bound to the browser', () => {
  it('refuses a consent verifier used twice, and reports the consent request as gone', async () => {
    const b = new Browser();
    let consentChallenge = '';
    const r = await runFlow(t, b, authorizeUrl(t, params()), {
      consent: (q) => {
        consentChallenge = q.challenge;
        return { grant_scope: q.requested_scope };
      },
    });
    expect(param(r.final, 'code')).toMatch(/^ory_ac_/);
    const again = await b.get(r.consentVerifierUrl as string);
    expect(param(again.location, 'error')).toBe('access_denied');
    expect(param(again.location, 'error_description')).toContain('The consent verifier has already been used.');
    const challenge = new URL(r.consentVerifierUrl as string).searchParams.get('consent_verifier');
    expect(challenge).toBeTruthy();
    const api = adminApi(t);
    const gone = await api.getOAuth2ConsentRequest({ consentChallenge }).catch((e) => e.response);
    expect(gone.status).toBe(410);
    expect(gone.data.redirect_to).toContain('/oauth2/auth?');
  });

  it('refuses a verifier that comes back without the browser’s CSRF cookie', async () => {
    const step = await new Browser().get(authorizeUrl(t, params()));
    const challenge = param(step.location, 'login_challenge') as string;
    const { data } = await adminApi(t).acceptOAuth2LoginRequest({
      loginChallenge: challenge,
      acceptOAuth2LoginRequest: { subject: 'alice' },
    });
    const other = await new Browser().get(data.redirect_to);
    expect(other.status).toBe(303);
    expect(param(other.location, 'error')).toBe('request_forbidden');
  });

  it('refuses a tampered verifier', async () => {
    const b = new Browser();
    const r = await runFlow(t, b, authorizeUrl(t, params()), { consent: () => false });
    const u = new URL(r.loginVerifierUrl as string);
    u.searchParams.set('login_verifier', `${u.searchParams.get('login_verifier')}x`);
    const step = await b.get(u.toString());
    expect(param(step.location, 'error')).toBe('access_denied');
  });
});

describe('codes are one-time and PKCE is checked', () => {
  it('fails a replayed code with invalid_grant and revokes the tokens it issued', async () => {
    const r = await runFlow(t, new Browser(), authorizeUrl(t, params()));
    const code = param(r.final, 'code') as string;
    const first = await exchangeCode(t, client, code);
    expect(first.status).toBe(200);
    const replay = await exchangeCode(t, client, code);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(replay.body.error_description).toContain('The authorization code has already been used.');
    const ui = await fetch(`${t.publicUrl}/userinfo`, {
      headers: { authorization: `Bearer ${first.body.access_token}` },
    });
    expect(ui.status).toBe(401);
    expect(ui.headers.get('www-authenticate')).toMatch(/^Bearer error="request_unauthorized"/);
  });

  it('checks the PKCE verifier: missing, wrong, S256 and plain', async () => {
    const verifier = 'a'.repeat(43);
    const { createHash } = await import('node:crypto');
    const s256 = createHash('sha256').update(verifier).digest('base64url');
    const run = async (p: Record<string, string>) =>
      param((await runFlow(t, new Browser(), authorizeUrl(t, params(p)))).final, 'code') as string;

    const missing = await exchangeCode(t, client, await run({ code_challenge: s256, code_challenge_method: 'S256' }));
    expect(missing.body.error).toBe('invalid_grant');
    const wrong = await exchangeCode(t, client, await run({ code_challenge: s256, code_challenge_method: 'S256' }), {
      code_verifier: 'b'.repeat(43),
    });
    expect(wrong.body.error_description).toContain('The PKCE code challenge did not match the code verifier.');
    const right = await exchangeCode(t, client, await run({ code_challenge: s256, code_challenge_method: 'S256' }), {
      code_verifier: verifier,
    });
    expect(right.status).toBe(200);
    const plain = await exchangeCode(
      t,
      client,
      await run({ code_challenge: verifier, code_challenge_method: 'plain' }),
      {
        code_verifier: verifier,
      },
    );
    expect(plain.status).toBe(200);
  });

  it('rejects a redirect_uri that differs from the authorization request', async () => {
    const code = param((await runFlow(t, new Browser(), authorizeUrl(t, params()))).final, 'code') as string;
    const r = await exchangeCode(t, client, code, { redirect_uri: 'http://127.0.0.1:9999/other' });
    expect(r.body.error).toBe('invalid_grant');
  });

  it('answers an unknown grant type with invalid_request and bad client credentials with 401', async () => {
    const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    const unknown = await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
      body: 'grant_type=password',
    });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toBe('invalid_request');
    const bad = await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.client_id}:wrong`).toString('base64')}`,
      },
      body: 'grant_type=authorization_code&code=x',
    });
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { error: string }).error).toBe('invalid_client');
  });
});
