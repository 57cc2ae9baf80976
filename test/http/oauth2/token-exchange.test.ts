/**
 * Token exchange (RFC 8693): impersonation and delegation (`act`, nested), subject tokens that are
 * gatehouse access tokens or JWTs of a trusted issuer, scope and audience never wider than allowed,
 * and every refusal; openid-client v6's `genericGrantRequest` as the client.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';
import { codeTokens, introspect, tokenRequest } from '../../helpers/tokens.ts';

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const JWT = 'urn:ietf:params:oauth:token-type:jwt';
const DOWNSTREAM = 'https://downstream.example.com';

let t: TestServer;
/** The API that receives the user's token and exchanges it for one to call downstream. */
let api: CreatedClient;
/** The web app the user logs in to; its tokens name the API in their audience. */
let web: CreatedClient;
let userToken: string;

beforeAll(async () => {
  t = await startTestServer();
  api = await createClient(t, {
    grant_types: ['client_credentials', GRANT],
    scope: 'read write',
    audience: [DOWNSTREAM],
  });
  web = await createClient(t, {
    grant_types: ['authorization_code', 'refresh_token'],
    scope: 'openid offline read write',
    audience: [api.client_id],
  });
  userToken = await userTokenOf(web, 'openid read write', api);
});
afterAll(() => t?.close());

/** Alice's access token from a code flow of `client` whose consent grants `scope` and the audience `audience`. */
const userTokenOf = async (client: CreatedClient, scope: string, audience: CreatedClient) =>
  (
    await codeTokens(t, client, scope, {
      consent: (q) => ({ grant_scope: q.requested_scope, grant_access_token_audience: [audience.client_id] }),
    })
  ).access_token as string;

const exchange = (form: Record<string, string>, c: CreatedClient = api) =>
  tokenRequest(t, c, { grant_type: GRANT, subject_token: userToken, subject_token_type: ACCESS, ...form });

describe('token exchange (RFC 8693)', () => {
  it('is advertised, and openid-client exchanges a token by impersonation', async () => {
    const config = await discoverAs(t, api);
    expect(config.serverMetadata().grant_types_supported).toContain(GRANT);
    const r = await oidc.genericGrantRequest(config, GRANT, {
      subject_token: userToken,
      subject_token_type: ACCESS,
      scope: 'read',
      audience: DOWNSTREAM,
    });
    expect(r.issued_token_type).toBe(ACCESS);
    expect(r.token_type).toBe('bearer');
    expect(r.refresh_token).toBeUndefined();
    expect(r.id_token).toBeUndefined();
    const info = (await introspect(t, r.access_token)).body;
    expect(info).toMatchObject({
      active: true,
      sub: 'alice',
      client_id: api.client_id,
      scope: 'read',
      aud: [DOWNSTREAM],
    });
    expect(info).not.toHaveProperty('act');
  });

  it('delegation: the actor is named in act, earlier actors nest inside (§4.1)', async () => {
    const actorToken = String(
      (await tokenRequest(t, api, { grant_type: 'client_credentials', scope: 'read' })).body.access_token,
    );
    const r = await exchange({ actor_token: actorToken, actor_token_type: ACCESS, scope: 'read' });
    expect(r.status).toBe(200);
    const delegated = String(r.body.access_token);
    expect((await introspect(t, delegated)).body).toMatchObject({ sub: 'alice', act: { sub: api.client_id } });

    // The delegated token was issued to `api`, which exchanges it again with another actor: the
    // new actor goes outermost, the earlier one nests inside.
    const thirdParty = await createClient(t, { grant_types: ['client_credentials'], scope: 'read' });
    const thirdActor = String(
      (await tokenRequest(t, thirdParty, { grant_type: 'client_credentials', scope: 'read' })).body.access_token,
    );
    // Without an actor the earlier chain is kept as it is.
    const again = await tokenRequest(t, api, {
      grant_type: GRANT,
      subject_token: delegated,
      subject_token_type: ACCESS,
      scope: 'read',
    });
    expect((await introspect(t, String(again.body.access_token))).body.act).toEqual({ sub: api.client_id });
    const nested = await tokenRequest(t, api, {
      grant_type: GRANT,
      subject_token: delegated,
      subject_token_type: ACCESS,
      actor_token: thirdActor,
      actor_token_type: ACCESS,
      scope: 'read',
    });
    expect(nested.status).toBe(200);
    expect((await introspect(t, String(nested.body.access_token))).body.act).toEqual({
      sub: thirdParty.client_id,
      act: { sub: api.client_id },
    });
  });

  it('a JWT access token of an exchange carries act', async () => {
    const jwtApi = await createClient(t, {
      grant_types: ['client_credentials', GRANT],
      scope: 'read',
      access_token_strategy: 'jwt',
    });
    const jwtWeb = await createClient(t, {
      grant_types: ['authorization_code'],
      scope: 'openid read',
      audience: [jwtApi.client_id],
    });
    const subject = await userTokenOf(jwtWeb, 'openid read', jwtApi);
    const actor = String(
      (await tokenRequest(t, jwtApi, { grant_type: 'client_credentials', scope: 'read' })).body.access_token,
    );
    const r = await tokenRequest(t, jwtApi, {
      grant_type: GRANT,
      subject_token: subject,
      subject_token_type: ACCESS,
      actor_token: actor,
      actor_token_type: ACCESS,
    });
    expect(r.status).toBe(200);
    const claims = decodeJwt(String(r.body.access_token));
    expect(claims).toMatchObject({ sub: 'alice', client_id: jwtApi.client_id, act: { sub: jwtApi.client_id } });
  });

  it('never widens: more scope is invalid_scope, an audience the client may not ask for is invalid_target', async () => {
    const narrow = await createClient(t, {
      grant_types: ['authorization_code'],
      scope: 'openid read',
      audience: [api.client_id],
    });
    const readOnly = await userTokenOf(narrow, 'openid read', api);
    const wider = await tokenRequest(t, api, {
      grant_type: GRANT,
      subject_token: readOnly,
      subject_token_type: ACCESS,
      scope: 'read write',
    });
    expect(wider.status).toBe(400);
    expect(wider.body.error).toBe('invalid_scope');
    const elsewhere = await exchange({ audience: 'https://not-allowed.example.com' });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toBe('invalid_target');
  });

  it('refuses unusable requests', async () => {
    const noGrant = await createClient(t, { grant_types: ['client_credentials'], scope: 'read', audience: [] });
    const stranger = await createClient(t, { grant_types: [GRANT], scope: 'read write' });
    const cases: Array<[string, Promise<{ status: number; body: Record<string, unknown> }>, string]> = [
      ['client without the grant', exchange({}, noGrant), 'unauthorized_client'],
      ['a token neither issued to nor addressed to the client', exchange({}, stranger), 'invalid_request'],
      ['an unknown token', exchange({ subject_token: 'ory_at_nope.nope' }), 'invalid_request'],
      [
        'an unsupported token type',
        exchange({ subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }),
        'invalid_request',
      ],
      [
        'a refresh token requested',
        exchange({ requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }),
        'invalid_request',
      ],
      ['an actor token without its type', exchange({ actor_token: userToken }), 'invalid_request'],
      ['no subject token', tokenRequest(t, api, { grant_type: GRANT, subject_token_type: ACCESS }), 'invalid_request'],
    ];
    for (const [what, p, error] of cases) {
      const r = await p;
      expect(r.status, what).toBe(400);
      expect(r.body.error, what).toBe(error);
    }
  });

  it('a JWT of a trusted issuer is a subject token, within the trust relationship’s scopes', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'partner-1', alg: 'ES256', use: 'sig' };
    const issuer = 'https://partner.example.com';
    const trusted = await fetch(`${t.adminUrl}/admin/trust/grants/jwt-bearer/issuers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        issuer,
        subject: 'bob@partner.example.com',
        scope: ['read'],
        jwk,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    expect(trusted.status).toBe(201);
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'partner-1' })
      .setIssuer(issuer)
      .setSubject('bob@partner.example.com')
      .setAudience(`${t.publicUrl}/oauth2/token`)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(privateKey);
    const r = await exchange({ subject_token: jwt, subject_token_type: JWT, scope: 'read' });
    expect(r.status).toBe(200);
    expect((await introspect(t, String(r.body.access_token))).body).toMatchObject({
      sub: 'bob@partner.example.com',
      scope: 'read',
    });
    const tooMuch = await exchange({ subject_token: jwt, subject_token_type: JWT, scope: 'read write' });
    expect(tooMuch.body.error).toBe('invalid_scope');
    const forged = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'partner-1' })
      .setIssuer(issuer)
      .setSubject('bob@partner.example.com')
      .setAudience(`${t.publicUrl}/oauth2/token`)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign((await generateKeyPair('ES256')).privateKey);
    const bad = await exchange({ subject_token: forged, subject_token_type: JWT });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
  });
});
