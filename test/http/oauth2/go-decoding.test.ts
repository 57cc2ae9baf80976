/**
 * Request bodies decoded as Go's encoding/json decodes them into Hydra's structs, where Hydra's
 * clients rely on it: a JSON null where a string goes is the empty string, also as an element of a
 * string list (Ory's reference consent app sends `grant_scope: [null]` when no scope box is ticked).
 * Real HTTP against the admin and public listeners.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { Browser, type CreatedClient, codeFlowUrl, createClient, exchangeCode, param } from '../../helpers/oauth2.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

/** A raw JSON PUT, as the reference app's fetch client sends it. */
const put = (path: string, body: string) =>
  fetch(`${t.adminUrl}${path}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });

/** Follows the authorization request to the login challenge. */
async function loginChallenge(browser: Browser, client: CreatedClient, scope: string): Promise<string> {
  const step = await browser.get(codeFlowUrl(t, client, scope));
  const challenge = param(step.location, 'login_challenge');
  if (!challenge) throw new Error(`no login challenge in ${step.location}`);
  return challenge;
}

/** Accepts a login or consent challenge with a raw body and follows the browser to the next redirect. */
async function accept(browser: Browser, kind: 'login' | 'consent', challenge: string, body: string) {
  const r = await put(
    `/admin/oauth2/auth/requests/${kind}/accept?${kind}_challenge=${encodeURIComponent(challenge)}`,
    body,
  );
  const json = (await r.json()) as { redirect_to?: string; error?: string; error_description?: string };
  if (r.status !== 200) return { status: r.status, json, location: '' };
  const step = await browser.get(json.redirect_to as string);
  return { status: r.status, json, location: step.location };
}

describe('accept and reject bodies: null where a string goes', () => {
  it('reads grant_scope [null] as [""]: the flow completes with no scope granted', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const login = await accept(
      browser,
      'login',
      await loginChallenge(browser, client, 'openid offline_access'),
      '{"subject":"alice"}',
    );
    const consent = param(login.location, 'consent_challenge') as string;
    // Exactly what hydra-login-consent-logout sends when no box is ticked: [req.body.grant_scope] of an absent field.
    const r = await accept(
      browser,
      'consent',
      consent,
      JSON.stringify({
        grant_scope: [undefined],
        session: { access_token: {}, id_token: {} },
        remember: false,
        remember_for: 3600,
      }),
    );
    expect(r.status).toBe(200);
    const code = param(r.location, 'code');
    expect(code).toBeTruthy();
    const token = await exchangeCode(t, client, code as string);
    expect(token.status).toBe(200);
    expect(token.body.access_token).toBeTruthy();
    expect(token.body.id_token).toBeUndefined();
    expect(token.body.refresh_token).toBeUndefined();
  });

  it('reads null elements of grant_access_token_audience and amr as empty strings, not as a 400', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const login = await accept(
      browser,
      'login',
      await loginChallenge(browser, client, 'openid'),
      '{"subject":"alice","amr":[null,"pwd"],"acr":null,"context":null}',
    );
    expect(login.status).toBe(200);
    const consent = param(login.location, 'consent_challenge') as string;
    const r = await accept(
      browser,
      'consent',
      consent,
      '{"grant_scope":["openid",null],"grant_access_token_audience":null}',
    );
    expect(r.status).toBe(200);
    expect(param(r.location, 'code')).toBeTruthy();
  });

  it('reads a null subject as an empty one: the same 400 as a missing subject, not a decoding error', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const challenge = await loginChallenge(browser, client, 'openid');
    for (const body of ['{"subject":null}', '{}']) {
      const r = await accept(browser, 'login', challenge, body);
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('invalid_request');
      expect(r.json.error_description).toContain("Field 'subject' must not be empty.");
    }
  });

  it('still refuses a string list element of another type, as Go does', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const r = await accept(
      browser,
      'login',
      await loginChallenge(browser, client, 'openid'),
      '{"subject":"alice","amr":[1]}',
    );
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('invalid_request');
  });

  it('reads null fields of a reject body as empty strings', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const challenge = await loginChallenge(browser, client, 'openid');
    const r = await put(
      `/admin/oauth2/auth/requests/login/reject?login_challenge=${encodeURIComponent(challenge)}`,
      '{"error":"access_denied","error_description":null,"error_hint":null,"status_code":null}',
    );
    expect(r.status).toBe(200);
    const { redirect_to } = (await r.json()) as { redirect_to: string };
    const back = await browser.get(redirect_to);
    expect(param(back.location, 'error')).toBe('access_denied');
  });
});

describe('other admin bodies: null where a string goes', () => {
  it('device accept: a null user_code is a missing one (invalid_request), not a decoding error', async () => {
    const r = await put('/admin/oauth2/auth/requests/device/accept?device_challenge=anything', '{"user_code":null}');
    expect(r.status).toBe(400);
    const body = (await r.json()) as { error: string; error_description: string };
    expect(body.error).toBe('invalid_request');
    expect(body.error_description).toContain("Field 'user_code' must not be empty.");
  });

  it('JSON Web Key set creation: null use and kid take their defaults', async () => {
    const r = await fetch(`${t.adminUrl}/admin/keys/go-null-set`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"alg":"RS256","use":null,"kid":null}',
    });
    expect(r.status).toBe(201);
    const { keys } = (await r.json()) as { keys: { use: string; kid: string; alg: string }[] };
    expect(keys[0]?.alg).toBe('RS256');
    expect(keys[0]?.use).toBe('sig');
    expect(keys[0]?.kid).toMatch(/^[0-9a-f-]{36}$/);
  });
});
