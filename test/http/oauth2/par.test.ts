/**
 * Pushed authorization requests (RFC 9126): `POST /oauth2/par` with the client's authentication,
 * the `request_uri` it answers starting one flow at `/oauth2/auth` with the pushed parameters only,
 * expiry, request objects inside the push, `require_pushed_authorization_requests` per client and
 * globally, and openid-client v6's `buildAuthorizationUrlWithPAR`.
 */
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
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
  pkcePair,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';

const clock = manualClock();
let t: TestServer;
let client: CreatedClient;
let parUrl: string;

beforeAll(async () => {
  t = await startTestServer({ clock });
  client = await createClient(t);
  parUrl = `${t.publicUrl}/oauth2/par`;
});
afterAll(() => t?.close());

const nowSec = () => Math.floor(clock.now().getTime() / 1000);
const basic = (c: CreatedClient) => `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`;

/** `authorization` null: no Authorization header (a public client, or none at all). */
async function push(form: Record<string, string>, authorization: string | null = basic(client)) {
  const res = await fetch(parUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, res, body: (await res.json()) as Record<string, unknown> };
}

const request = (over: Record<string, string> = {}) => ({
  response_type: 'code',
  redirect_uri: CB,
  scope: 'openid offline',
  state: randomState(),
  ...over,
});

/** `/oauth2/auth` with only the client and the pushed handle, as RFC 9126 §4 has it. */
const startUrl = (requestUri: string, extra: Record<string, string> = {}, c = client) =>
  authorizeUrl(t, { client_id: c.client_id, request_uri: requestUri, ...extra });

describe('POST /oauth2/par', () => {
  it('is advertised in discovery, on by default and not required', async () => {
    const d = (await (await fetch(`${t.publicUrl}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(d.pushed_authorization_request_endpoint).toBe(parUrl);
    expect(d.require_pushed_authorization_requests).toBe(false);
  });

  it('answers 201 with a request_uri that starts the flow with the pushed parameters only', async () => {
    const pkce = pkcePair();
    const p = request({ code_challenge: pkce.challenge, code_challenge_method: 'S256' });
    const pushed = await push(p);
    expect(pushed.status).toBe(201);
    expect(pushed.res.headers.get('cache-control')).toBe('no-store');
    expect(pushed.body.expires_in).toBe(60);
    const uri = String(pushed.body.request_uri);
    expect(uri).toMatch(/^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$/);
    // Parameters in the browser's URL beside the handle are not used (RFC 9126 §4).
    const r = await runFlow(t, new Browser(), startUrl(uri, { scope: 'openid', state: 'changed-by-someone' }));
    expect(param(r.final, 'state')).toBe(p.state);
    expect(param(r.final, 'scope')).toBe('openid offline');
    const tok = await exchangeCode(t, client, param(r.final, 'code') as string, { code_verifier: pkce.verifier });
    expect(tok.status).toBe(200);
    expect(tok.body.scope).toBe('openid offline');
  });

  it('shows the login UI the handle, never the pushed parameters', async () => {
    const p = request({ login_hint: 'secret-hint@example.com' });
    const uri = String((await push(p)).body.request_uri);
    const step = await new Browser().get(startUrl(uri));
    expect(step.status).toBe(302);
    const challenge = param(step.location, 'login_challenge') as string;
    const { data } = await adminApi(t).getOAuth2LoginRequest({ loginChallenge: challenge });
    const requestUrl = new URL(data.request_url);
    expect(requestUrl.searchParams.get('request_uri')).toBe(uri);
    expect(requestUrl.searchParams.get('redirect_uri')).toBeNull();
    expect(requestUrl.searchParams.get('login_hint')).toBeNull();
    expect(data.oidc_context?.login_hint).toBe('secret-hint@example.com');
    expect(data.requested_scope).toEqual(['openid', 'offline']);
  });

  it('a request_uri starts one flow; that flow still finishes after the handle’s lifetime', async () => {
    const p = request();
    const uri = String((await push(p)).body.request_uri);
    const b = new Browser();
    const first = await b.get(startUrl(uri));
    expect(param(first.location, 'login_challenge')).toBeTruthy();
    // A second start with the same handle (a replay, or another browser) is refused at the error page.
    const again = await new Browser().get(startUrl(uri));
    expect(again.status).toBe(302);
    expect(again.location.startsWith(CB)).toBe(false);
    expect(param(again.location, 'error')).toBe('invalid_request_uri');
    // The user takes longer at the login page than the handle lived: the flow goes on.
    clock.advance(5 * 60_000);
    const accepted = await adminApi(t).acceptOAuth2LoginRequest({
      loginChallenge: param(first.location, 'login_challenge') as string,
      acceptOAuth2LoginRequest: { subject: 'alice' },
    });
    const consentStep = await b.get(accepted.data.redirect_to);
    const consent = param(consentStep.location, 'consent_challenge') as string;
    expect(consent).toBeTruthy();
    const done = await adminApi(t).acceptOAuth2ConsentRequest({
      consentChallenge: consent,
      acceptOAuth2ConsentRequest: { grant_scope: ['openid', 'offline'] },
    });
    const final = await b.get(done.data.redirect_to);
    expect(final.location.startsWith(CB)).toBe(true);
    expect(param(final.location, 'state')).toBe(p.state);
    expect(param(final.location, 'code')).toMatch(/^ory_ac_/);
  });

  it('the flow’s later steps find the pushed request in the process that started it, and in another', async () => {
    const other = await startTestServer({ database: t.database, clock });
    try {
      /** Runs a flow started on `t`, its login re-entry and the rest on `resume`; the callback URL. */
      const flow = async (resume: TestServer, between?: (uri: string) => Promise<void>) => {
        const p = request();
        const uri = String((await push(p)).body.request_uri);
        const b = new Browser();
        const first = await b.get(startUrl(uri));
        await between?.(uri);
        const accepted = await adminApi(t).acceptOAuth2LoginRequest({
          loginChallenge: param(first.location, 'login_challenge') as string,
          acceptOAuth2LoginRequest: { subject: 'alice' },
        });
        const consentStep = await b.get(accepted.data.redirect_to.replace(t.publicUrl, resume.publicUrl));
        const consent = param(consentStep.location, 'consent_challenge');
        if (!consent) return consentStep.location;
        const done = await adminApi(t).acceptOAuth2ConsentRequest({
          consentChallenge: consent,
          acceptOAuth2ConsentRequest: { grant_scope: ['openid', 'offline'] },
        });
        const final = await b.get(done.data.redirect_to.replace(t.publicUrl, resume.publicUrl));
        expect(param(final.location, 'state') ?? param(final.location, 'error')).toBeTruthy();
        return final.location;
      };
      // Re-entries on another process read the started handle from the database.
      const elsewhere = await flow(other);
      expect(param(elsewhere, 'code')).toMatch(/^ory_ac_/);
      // The process that started the flow keeps what it read: its re-entries need no read (shown
      // here by removing the row behind its back), while another process, which must read it, refuses.
      const gone = (uri: string) =>
        t.container.pool
          .query('delete from oauth2_pushed_requests where signature = $1', [uri.slice(uri.lastIndexOf('.') + 1)])
          .then(() => undefined);
      const here = await flow(t, gone);
      expect(param(here, 'code')).toMatch(/^ory_ac_/);
      const refused = await flow(other, gone);
      expect(param(refused, 'code')).toBeNull();
      expect(refused).toContain('invalid_request_uri');
    } finally {
      await other.close();
    }
  });

  it('of ten browsers starting with one request_uri at once, one gets the flow', async () => {
    const uri = String((await push(request())).body.request_uri);
    const starts = await Promise.all(Array.from({ length: 10 }, () => new Browser().get(startUrl(uri))));
    const flows = starts.filter((r) => param(r.location, 'login_challenge'));
    expect(flows).toHaveLength(1);
    for (const r of starts.filter((x) => !param(x.location, 'login_challenge')))
      expect(param(r.location, 'error')).toBe('invalid_request_uri');
  });

  it('an unused request_uri expires after oauth2.pushed_authorization_requests.ttl', async () => {
    const uri = String((await push(request())).body.request_uri);
    clock.advance(61_000);
    const r = await new Browser().get(startUrl(uri));
    expect(param(r.location, 'error')).toBe('invalid_request_uri');
  });

  it('refuses a forged handle, another client’s handle, and a handle without client_id', async () => {
    const uri = String((await push(request())).body.request_uri);
    const forged = `${uri.slice(0, -3)}${uri.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    expect(param((await new Browser().get(startUrl(forged))).location, 'error')).toBe('invalid_request_uri');
    const other = await createClient(t);
    expect(param((await new Browser().get(startUrl(uri, {}, other))).location, 'error')).toBe('invalid_request_uri');
    const noClient = await new Browser().get(authorizeUrl(t, { request_uri: uri }));
    expect(param(noClient.location, 'error')).toBe('invalid_request');
    // None of these used it up.
    expect(param((await new Browser().get(startUrl(uri))).location, 'login_challenge')).toBeTruthy();
  });

  it('answers errors as the token endpoint does, and stores nothing', async () => {
    const before = await t.container.pool.query('select count(*)::int as n from oauth2_pushed_requests');
    const none = await push(request({ client_id: client.client_id }), null);
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('invalid_client');
    const wrong = await push(request(), `Basic ${Buffer.from(`${client.client_id}:nope`).toString('base64')}`);
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const withUri = await push(request({ request_uri: 'https://client.example/r' }));
    expect(withUri.status).toBe(400);
    expect(withUri.body.error).toBe('invalid_request');
    const scope = await push(request({ scope: 'openid admin' }));
    expect(scope.status).toBe(400);
    expect(scope.body.error).toBe('invalid_scope');
    const redirect = await push(request({ redirect_uri: 'https://evil.example/cb' }));
    expect(redirect.status).toBe(400);
    expect(redirect.body.error).toBe('invalid_request');
    const mismatch = await push(request({ client_id: 'someone-else' }));
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error).toBe('invalid_request');
    const plain = await push(request({ code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }));
    expect(plain.status).toBe(400);
    expect(plain.body.error).toBe('invalid_request');
    const empty = await push({});
    expect(empty.status).toBe(400);
    const after = await t.container.pool.query('select count(*)::int as n from oauth2_pushed_requests');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('a public client pushes with its client_id; a request object inside the push is the request', async () => {
    const keys = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const pub = await createClient(t, {
      token_endpoint_auth_method: 'none',
      jwks: { keys: [jwk] },
      request_object_signing_alg: 'RS256',
    });
    const state = randomState();
    const pkce = pkcePair();
    const jwt = await new SignJWT({
      client_id: pub.client_id,
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid',
      state,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(pub.client_id)
      .setAudience(t.container.config.urls.self.issuer)
      // The server's clock (earlier tests moved it on) decides a request object's lifetime.
      .setIssuedAt(nowSec())
      .setExpirationTime(nowSec() + 300)
      .sign(keys.privateKey);
    const pushed = await push({ client_id: pub.client_id, request: jwt }, null);
    expect(pushed.status).toBe(201);
    const r = await runFlow(t, new Browser(), startUrl(String(pushed.body.request_uri), {}, pub));
    expect(param(r.final, 'state')).toBe(state);
    expect(param(r.final, 'code')).toMatch(/^ory_ac_/);
    // A request object signed by another key is refused at the push.
    const other = await generateKeyPair('RS256');
    const forged = await new SignJWT({ client_id: pub.client_id, response_type: 'code', scope: 'openid', state })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setExpirationTime(nowSec() + 300)
      .sign(other.privateKey);
    const bad = await push({ client_id: pub.client_id, request: forged }, null);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request_object');
  });

  it('private_key_jwt: an assertion for the PAR endpoint or the issuer is accepted (RFC 9126 §2)', async () => {
    const keys = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'a1', alg: 'ES256', use: 'sig' };
    const c = await createClient(t, {
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      jwks: { keys: [jwk] },
    });
    const assertion = (aud: string) =>
      new SignJWT({ jti: randomState() })
        .setProtectedHeader({ alg: 'ES256', kid: 'a1' })
        .setIssuer(c.client_id)
        .setSubject(c.client_id)
        .setAudience(aud)
        .setIssuedAt(nowSec())
        .setExpirationTime(nowSec() + 60)
        .sign(keys.privateKey);
    const form = async (aud: string) => ({
      ...request(),
      client_id: c.client_id,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await assertion(aud),
    });
    expect((await push(await form(parUrl), null)).status).toBe(201);
    expect((await push(await form(t.container.config.urls.self.issuer), null)).status).toBe(201);
    const elsewhere = await push(await form('https://other.example/token'), null);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.error).toBe('invalid_client');
  });

  it('require_pushed_authorization_requests on a client refuses its plain authorization requests', async () => {
    const strict = await createClient(t, { require_pushed_authorization_requests: true });
    const got = (await (await fetch(`${t.adminUrl}/admin/clients/${strict.client_id}`)).json()) as Record<
      string,
      unknown
    >;
    expect(got.require_pushed_authorization_requests).toBe(true);
    // Other clients read as Hydra renders them: no such field.
    const plainClient = await (await fetch(`${t.adminUrl}/admin/clients/${client.client_id}`)).json();
    expect(plainClient).not.toHaveProperty('require_pushed_authorization_requests');
    const direct = await new Browser().get(authorizeUrl(t, { client_id: strict.client_id, ...request() }));
    expect(direct.location.startsWith(CB)).toBe(true);
    expect(param(direct.location, 'error')).toBe('invalid_request');
    const uri = String((await push(request(), basic(strict))).body.request_uri);
    const ok = await new Browser().get(startUrl(uri, {}, strict));
    expect(param(ok.location, 'login_challenge')).toBeTruthy();
  });

  it('openid-client v6 pushes, authorizes and exchanges the code', async () => {
    const config = await discoverAs(t, client);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: CB,
      scope: 'openid offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    const r = await runFlow(t, new Browser(), url.toString());
    const tokens = await oidc.authorizationCodeGrant(config, new URL(r.final), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.access_token).toMatch(/^ory_at_/);
    expect(tokens.scope).toBe('openid offline_access');
  });
});

describe('oauth2.pushed_authorization_requests', () => {
  it('required: every authorization request must be pushed, and discovery says so', async () => {
    const s = await startTestServer({ overrides: { 'oauth2.pushed_authorization_requests.required': true } });
    try {
      const c = await createClient(s);
      const d = (await (await fetch(`${s.publicUrl}/.well-known/openid-configuration`)).json()) as Record<
        string,
        unknown
      >;
      expect(d.require_pushed_authorization_requests).toBe(true);
      const r = await new Browser().get(authorizeUrl(s, { client_id: c.client_id, ...request() }));
      expect(param(r.location, 'error')).toBe('invalid_request');
    } finally {
      await s.close();
    }
  });

  it('enabled: false answers 404 and discovery names no endpoint', async () => {
    const s = await startTestServer({ overrides: { 'oauth2.pushed_authorization_requests.enabled': false } });
    try {
      const d = (await (await fetch(`${s.publicUrl}/.well-known/openid-configuration`)).json()) as Record<
        string,
        unknown
      >;
      expect(d).not.toHaveProperty('pushed_authorization_request_endpoint');
      const r = await fetch(`${s.publicUrl}/oauth2/par`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'client_id=x',
      });
      expect(r.status).toBe(404);
    } finally {
      await s.close();
    }
  });
});
