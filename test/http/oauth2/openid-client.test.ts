/** openid-client (v6) as the relying party: discovery, PKCE, code exchange, ID token validation, userinfo. */
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { authorizeUrl, Browser, CB, createClient, param, randomState, runFlow } from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const consentWithClaims = {
  consent: (q: { requested_scope: string[] }) => ({
    grant_scope: q.requested_scope,
    session: { id_token: { email: 'alice@example.com', email_verified: true } },
  }),
  login: () => ({ subject: 'alice', acr: 'urn:acr:mfa', amr: ['pwd', 'otp'] }),
};

describe('openid-client as the relying party', () => {
  it('discovers, authorizes with PKCE, exchanges the code, validates the ID token and reads userinfo', async () => {
    const client = await createClient(t);
    const config = await discoverAs(t, client);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CB,
      scope: 'openid offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      max_age: '300',
    });
    const r = await runFlow(t, new Browser(), url.toString(), consentWithClaims);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(r.final), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      maxAge: 300,
    });
    expect(tokens.refresh_token).toMatch(/^ory_rt_/);
    const claims = tokens.claims();
    expect(claims).toMatchObject({
      iss: t.container.config.urls.self.issuer,
      sub: 'alice',
      aud: [client.client_id],
      nonce,
      acr: 'urn:acr:mfa',
      amr: ['pwd', 'otp'],
      email: 'alice@example.com',
    });
    for (const k of ['auth_time', 'rat', 'iat', 'exp', 'at_hash', 'sid', 'jti']) expect(claims).toHaveProperty(k);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, 'alice');
    expect(info).toMatchObject({ sub: 'alice', email: 'alice@example.com', aud: [client.client_id] });
    for (const k of ['nonce', 'at_hash', 'exp', 'sid', 'jti']) expect(info).not.toHaveProperty(k);
  });

  it('signs userinfo for clients registered with userinfo_signed_response_alg RS256', async () => {
    const client = await createClient(t, { userinfo_signed_response_alg: 'RS256' });
    const p = {
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid',
      state: randomState(),
    };
    const r = await runFlow(t, new Browser(), authorizeUrl(t, p), consentWithClaims);
    const tok = await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: param(r.final, 'code') as string,
        redirect_uri: CB,
      }),
    });
    const { access_token } = (await tok.json()) as { access_token: string };
    const ui = await fetch(`${t.publicUrl}/userinfo`, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(ui.headers.get('content-type')).toMatch(/^application\/jwt/);
    const jwks = (await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as never;
    const { payload } = await jwtVerify(await ui.text(), createLocalJWKSet(jwks));
    expect(payload).toMatchObject({ sub: 'alice', email: 'alice@example.com' });
  });

  it('answers the hybrid flow (code id_token) in the fragment with c_hash and nonce', async () => {
    const client = await createClient(t, {
      response_types: ['code id_token', 'token', 'id_token token'],
      grant_types: ['authorization_code', 'implicit'],
    });
    const nonce = 'nonce-0123456789';
    const hybrid = await runFlow(
      t,
      new Browser(),
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'code id_token',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
        nonce,
      }),
    );
    const frag = new URLSearchParams(new URL(hybrid.final).hash.slice(1));
    expect(frag.get('code')).toMatch(/^ory_ac_/);
    const idt = decodeJwt(frag.get('id_token') as string);
    expect(idt.nonce).toBe(nonce);
    expect(typeof idt.c_hash).toBe('string');
    const implicit = await runFlow(
      t,
      new Browser(),
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'id_token token',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
        nonce,
        response_mode: 'form_post',
      }),
    ).catch((e: Error) => e);
    // form_post answers 200 with a self-submitting form instead of a redirect.
    expect(String(implicit)).toMatch(/unexpected status 200/);
    const token = await runFlow(
      t,
      new Browser(),
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'token',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
      }),
    );
    const f2 = new URLSearchParams(new URL(token.final).hash.slice(1));
    expect(f2.get('access_token')).toMatch(/^ory_at_/);
    expect(f2.get('token_type')).toBe('bearer');
  });
});
