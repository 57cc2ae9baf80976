/** JWT access tokens, pairwise subjects, private_key_jwt client authentication and id_token_hint. */
import { createHash, randomUUID } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  Browser,
  CB,
  type CreatedClient,
  codeFlowUrl,
  createClient,
  exchangeCode,
  param,
  runFlow,
} from '../../helpers/oauth2.ts';

const SALT = 'pairwise-salt-0123';
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({
    overrides: {
      'oidc.subject_identifiers.supported_types': ['public', 'pairwise'],
      'oidc.subject_identifiers.pairwise.salt': SALT,
      'oauth2.allowed_top_level_claims': ['tenant'],
    },
  });
});
afterAll(() => t?.close());

async function codeFor(client: CreatedClient, extra: Record<string, string> = {}, b = new Browser()) {
  const r = await runFlow(t, b, codeFlowUrl(t, client, 'openid', extra), {
    login: (q) => ({ subject: q.skip ? q.subject : 'dave', remember: true }),
    consent: (q) => ({ grant_scope: q.requested_scope, session: { access_token: { tenant: 't9', plan: 'pro' } } }),
  });
  return param(r.final, 'code') as string;
}

describe('token variants', () => {
  it('issues JWT access tokens for clients with access_token_strategy jwt, usable at userinfo', async () => {
    const client = await createClient(t, { access_token_strategy: 'jwt' });
    const tok = await exchangeCode(t, client, await codeFor(client));
    const at = tok.body.access_token as string;
    const jwks = (await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as never;
    const { payload, protectedHeader } = await jwtVerify(at, createLocalJWKSet(jwks));
    expect(protectedHeader.kid).toBeTruthy();
    expect(payload).toMatchObject({
      iss: t.container.config.urls.self.issuer,
      sub: 'dave',
      client_id: client.client_id,
      scp: ['openid'],
      aud: [],
      tenant: 't9',
      ext: { tenant: 't9', plan: 'pro' },
    });
    expect(payload.nbf).toBe(payload.iat);
    const ui = await fetch(`${t.publicUrl}/userinfo`, { headers: { authorization: `Bearer ${at}` } });
    expect(ui.status).toBe(200);
    const forged = `${at.split('.').slice(0, 2).join('.')}.${'A'.repeat(40)}`;
    const bad = await fetch(`${t.publicUrl}/userinfo`, { headers: { authorization: `Bearer ${forged}` } });
    expect(bad.status).toBe(401);
  });

  it('gives pairwise clients a pairwise sub in the ID token and at userinfo', async () => {
    const client = await createClient(t, { subject_type: 'pairwise' });
    const tok = await exchangeCode(t, client, await codeFor(client));
    const expected = createHash('sha256').update('127.0.0.1:9999').update('dave').update(SALT).digest('hex');
    expect(decodeJwt(tok.body.id_token as string).sub).toBe(expected);
    const ui = await fetch(`${t.publicUrl}/userinfo`, {
      headers: { authorization: `Bearer ${tok.body.access_token}` },
    });
    expect(((await ui.json()) as { sub: string }).sub).toBe(expected);
  });

  it('authenticates private_key_jwt clients and refuses a reused jti', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', use: 'sig', alg: 'RS256' };
    const client = await createClient(t, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } });
    const assertion = (jti: string) =>
      new SignJWT({ jti })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(client.client_id)
        .setSubject(client.client_id)
        .setAudience(`${t.publicUrl}/oauth2/token`)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
    const exchange = async (code: string, jti: string) => {
      const r = await fetch(`${t.publicUrl}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: CB,
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: await assertion(jti),
        }),
      });
      return { status: r.status, body: (await r.json()) as Record<string, string> };
    };
    const jti = randomUUID();
    const ok = await exchange(await codeFor(client), jti);
    expect(ok.status).toBe(200);
    const reused = await exchange(await codeFor(client), jti);
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('jti_known');
  });

  it('accepts an id_token_hint for the session subject and refuses one for another subject', async () => {
    const client = await createClient(t);
    const b = new Browser();
    const tok = await exchangeCode(t, client, await codeFor(client, {}, b));
    const hint = tok.body.id_token as string;
    const ok = await runFlow(t, b, codeFlowUrl(t, client, 'openid', { id_token_hint: hint }));
    expect(ok.loginSeen?.skip).toBe(true);
    const other = await createClient(t, { subject_type: 'pairwise' });
    const otherTok = await exchangeCode(t, other, await codeFor(other, {}, new Browser()));
    const mismatch = await b.get(codeFlowUrl(t, client, 'openid', { id_token_hint: otherTok.body.id_token as string }));
    expect(param(mismatch.location, 'error')).toBe('login_required');
  });
});
