/**
 * RFC 9207: every authorization response at the client's redirect URI names the issuer in `iss`,
 * success and error, on every response mode; discovery says so. Errors shown on `urls.error` are
 * not authorization responses and carry none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  authorizeUrl,
  Browser,
  CB,
  type CreatedClient,
  createClient,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';

let t: TestServer;
let client: CreatedClient;
let issuer: string;

beforeAll(async () => {
  t = await startTestServer();
  client = await createClient(t, {
    grant_types: ['authorization_code', 'implicit', 'refresh_token'],
    response_types: ['code', 'token', 'id_token', 'code id_token', 'token id_token', 'token id_token code'],
  });
  const d = (await (await fetch(`${t.publicUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  issuer = String(d.issuer);
  expect(d.authorization_response_iss_parameter_supported).toBe(true);
});
afterAll(() => t?.close());

const params = (over: Record<string, string> = {}) => ({
  client_id: client.client_id,
  response_type: 'code',
  redirect_uri: CB,
  scope: 'openid',
  state: randomState(),
  nonce: randomState(),
  ...over,
});

describe('iss on authorization responses (RFC 9207)', () => {
  it('a code in the query names the issuer, equal to discovery issuer', async () => {
    const r = await runFlow(t, new Browser(), authorizeUrl(t, params()));
    expect(param(r.final, 'code')).toMatch(/^ory_ac_/);
    expect(new URL(r.final).searchParams.getAll('iss')).toEqual([issuer]);
  });

  it('implicit and hybrid responses carry it in the fragment', async () => {
    for (const response_type of ['token', 'id_token', 'code id_token', 'token id_token code']) {
      const r = await runFlow(t, new Browser(), authorizeUrl(t, params({ response_type })));
      const frag = new URLSearchParams(new URL(r.final).hash.slice(1));
      expect(frag.get('state'), response_type).not.toBeNull();
      expect(frag.getAll('iss'), response_type).toEqual([issuer]);
      expect(new URL(r.final).searchParams.get('iss'), response_type).toBeNull();
    }
  });

  it('a form_post response has an iss field', async () => {
    const b = new Browser();
    const page = await formPostPage(b, params({ response_mode: 'form_post' }));
    expect(page).toMatch(/name="code"/);
    expect(page).toContain(`name="iss" value="${issuer}"`);
  });

  it('errors at the client carry it too: a refused consent, an invalid scope, form_post', async () => {
    const denied = await runFlow(t, new Browser(), authorizeUrl(t, params()), { consent: () => false });
    expect(param(denied.final, 'error')).toBe('access_denied');
    expect(new URL(denied.final).searchParams.getAll('iss')).toEqual([issuer]);

    const bad = await new Browser().get(authorizeUrl(t, params({ scope: 'openid not-allowed' })));
    expect(bad.status).toBe(303);
    expect(bad.location.startsWith(CB)).toBe(true);
    expect(param(bad.location, 'error')).toBe('invalid_scope');
    expect(param(bad.location, 'iss')).toBe(issuer);

    const fragErr = await new Browser().get(
      authorizeUrl(t, params({ response_type: 'token', scope: 'openid not-allowed' })),
    );
    const frag = new URLSearchParams(new URL(fragErr.location).hash.slice(1));
    expect(frag.get('error')).toBe('invalid_scope');
    expect(frag.get('iss')).toBe(issuer);

    const posted = await new Browser().get(
      authorizeUrl(t, params({ scope: 'openid not-allowed', response_mode: 'form_post' })),
    );
    expect(posted.status).toBe(200);
    const html = await posted.res.text();
    expect(html).toContain('name="error" value="invalid_scope"');
    expect(html).toContain(`name="iss" value="${issuer}"`);
  });

  it('an error shown on the error page (redirect URI not trusted) is not an authorization response', async () => {
    const r = await new Browser().get(authorizeUrl(t, params({ redirect_uri: 'https://evil.example/cb' })));
    expect(r.status).toBe(302);
    expect(r.location.startsWith(CB)).toBe(false);
    expect(param(r.location, 'error')).toBe('invalid_request');
    expect(param(r.location, 'iss')).toBeNull();
  });
});

/** Runs a flow through login and consent by the admin API, up to the self-submitting form. */
async function formPostPage(b: Browser, p: Record<string, string>): Promise<string> {
  let step = await b.get(authorizeUrl(t, p));
  for (let i = 0; i < 6 && (step.status === 302 || step.status === 303); i++) {
    const loc = step.location;
    const login = param(loc, 'login_challenge');
    const consent = param(loc, 'consent_challenge');
    const admin = (kind: string, challenge: string, body: unknown) =>
      fetch(`${t.adminUrl}/admin/oauth2/auth/requests/${kind}/accept?${kind}_challenge=${challenge}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ((await r.json()) as { redirect_to: string }).redirect_to);
    if (login && !loc.startsWith(`${t.publicUrl}/oauth2/auth`)) {
      step = await b.get(await admin('login', login, { subject: 'alice' }));
    } else if (consent && !loc.startsWith(`${t.publicUrl}/oauth2/auth`)) {
      step = await b.get(await admin('consent', consent, { grant_scope: ['openid'] }));
    } else break;
  }
  expect(step.status).toBe(200);
  return step.res.text();
}
