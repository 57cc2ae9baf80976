import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlowState } from '../../../src/oauth2/flows/states.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID } from '../../../src/oauth2/tables.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const state = (over: Partial<FlowState> = {}): FlowState => ({
  nid: DEFAULT_NID,
  id: 'login-id-1',
  consentRequestId: 'consent-id-1',
  clientId: 'some-client',
  requestUrl: 'http://127.0.0.1:1/oauth2/auth?client_id=some-client&state=abcdefgh',
  requestedScope: ['openid'],
  requestedAudience: [],
  requestedAt: Math.floor(Date.now() / 1000),
  loginSkip: false,
  subject: '',
  sessionId: 'sid-1',
  authTime: 0,
  oidcContext: { acr_values: [], ui_locales: [], id_token_hint_claims: {} },
  loginCsrf: 'csrf',
  ...over,
});

const admin = (path: string, init: RequestInit = {}) =>
  fetch(`${t.adminUrl}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
  });

describe('login and consent challenges on the admin API', () => {
  it('answers 400 invalid_request when the challenge parameter is missing', async () => {
    const r = await admin('/admin/oauth2/auth/requests/login');
    expect(r.status).toBe(400);
    const body = (await r.json()) as { error: string; error_description: string };
    expect(body.error).toBe('invalid_request');
    expect(body.error_description).toContain("Query parameter 'challenge' is not defined but should have been.");
  });

  it('answers 404 for a challenge that does not decrypt, or was tampered with', async () => {
    const good = await t.container.oauth2.flows.codec.seal('login_challenge', state());
    const tampered = `${good.slice(0, -4)}${good.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    for (const c of ['nonsense', tampered]) {
      const r = await admin(`/admin/oauth2/auth/requests/login?login_challenge=${encodeURIComponent(c)}`);
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({
        error: 'Not Found',
        error_description: 'Unable to locate the requested resource',
      });
    }
  });

  it('refuses a token of another kind: a login challenge is not a consent challenge', async () => {
    const login = await t.container.oauth2.flows.codec.seal('login_challenge', state());
    const r = await admin(`/admin/oauth2/auth/requests/consent?consent_challenge=${encodeURIComponent(login)}`);
    expect(r.status).toBe(404);
    const put = await admin(`/admin/oauth2/auth/requests/consent/accept?challenge=${encodeURIComponent(login)}`, {
      method: 'PUT',
      body: '{}',
    });
    expect(put.status).toBe(404);
  });

  it('answers 401 request_unauthorized for an expired challenge', async () => {
    const old = state({ requestedAt: Math.floor(Date.now() / 1000) - 31 * 60 });
    const c = await t.container.oauth2.flows.codec.seal('login_challenge', old);
    const r = await admin(`/admin/oauth2/auth/requests/login?challenge=${encodeURIComponent(c)}`);
    expect(r.status).toBe(401);
    const body = (await r.json()) as { error: string; error_description: string };
    expect(body.error).toBe('request_unauthorized');
    expect(body.error_description).toContain('The login request has expired, please try again.');
  });

  it('requires a subject to accept a login, and redirects with a verifier', async () => {
    const c = encodeURIComponent(await t.container.oauth2.flows.codec.seal('login_challenge', state()));
    const bad = await admin(`/admin/oauth2/auth/requests/login/accept?login_challenge=${c}`, {
      method: 'PUT',
      body: JSON.stringify({ subject: '' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error_description: string }).error_description).toContain(
      "Field 'subject' must not be empty.",
    );
    const ok = await admin(`/admin/oauth2/auth/requests/login/accept?login_challenge=${c}`, {
      method: 'PUT',
      body: JSON.stringify({ subject: 'alice', remember: true }),
    });
    expect(ok.status).toBe(200);
    const { redirect_to } = (await ok.json()) as { redirect_to: string };
    const u = new URL(redirect_to);
    expect(u.searchParams.get('client_id')).toBe('some-client');
    const verifier = u.searchParams.get('login_verifier') as string;
    const decoded = await t.container.oauth2.flows.codec.open('login_verifier', verifier);
    expect(decoded.subject).toBe('alice');
    expect(decoded.login?.remember).toBe(true);
  });

  it('sends a skipped login accepted for another subject back to a forced login', async () => {
    const c = await t.container.oauth2.flows.codec.seal('login_challenge', state({ loginSkip: true, subject: 'bob' }));
    const r = await admin(`/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(c)}`, {
      method: 'PUT',
      body: JSON.stringify({ subject: 'alice' }),
    });
    expect(r.status).toBe(200);
    const u = new URL(((await r.json()) as { redirect_to: string }).redirect_to);
    expect(u.searchParams.get('prompt')).toBe('login');
    expect(u.searchParams.get('login_verifier')).toBeNull();
  });

  it('uses "login request denied" and "consent request denied" when a reject names no error', async () => {
    const login = await t.container.oauth2.flows.codec.seal('login_challenge', state());
    const r = await admin(`/admin/oauth2/auth/requests/login/reject?login_challenge=${encodeURIComponent(login)}`, {
      method: 'PUT',
      body: '{}',
    });
    const v = new URL(((await r.json()) as { redirect_to: string }).redirect_to).searchParams.get(
      'login_verifier',
    ) as string;
    expect((await t.container.oauth2.flows.codec.open('login_verifier', v)).loginError).toMatchObject({
      error: 'login request denied',
      status_code: 400,
    });
    const consent = await t.container.oauth2.flows.codec.seal('consent_challenge', state({ subject: 'alice' }));
    const r2 = await admin(`/admin/oauth2/auth/requests/consent/reject?challenge=${encodeURIComponent(consent)}`, {
      method: 'PUT',
      body: '{}',
    });
    const v2 = new URL(((await r2.json()) as { redirect_to: string }).redirect_to).searchParams.get(
      'consent_verifier',
    ) as string;
    expect((await t.container.oauth2.flows.codec.open('consent_verifier', v2)).consentError?.error).toBe(
      'consent request denied',
    );
  });
});
