/**
 * Token lifespans per grant: `ttl.*` from the configuration, and the client's 13 lifespan fields
 * (`*_token_lifespan`) winning over them, for every grant type gatehouse issues tokens for.
 */
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
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
import { codeTokens, introspect, refresh, tokenRequest } from '../../helpers/tokens.ts';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    overrides: { 'ttl.access_token': '2h', 'ttl.refresh_token': '48h', 'ttl.id_token': '30m' },
  });
});
afterAll(() => t?.close());

const ALL_GRANTS = ['authorization_code', 'refresh_token', 'implicit', 'client_credentials', JWT_BEARER];
const idLifetime = (idToken: string) => {
  const c = decodeJwt(idToken);
  return (c.exp as number) - (c.iat as number);
};
const refreshLifetime = async (rt: string) => {
  const info = (await introspect(t, rt)).body;
  return Math.round((info.exp - Date.now() / 1000) / 60) * 60;
};

async function setLifespans(client: CreatedClient, body: Record<string, string>) {
  const r = await fetch(`${t.adminUrl}/admin/clients/${client.client_id}/lifespans`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
}

async function implicit(client: CreatedClient) {
  const r = await runFlow(
    t,
    new Browser(),
    authorizeUrl(t, {
      client_id: client.client_id,
      response_type: 'id_token token',
      redirect_uri: CB,
      scope: 'openid',
      state: randomState(),
      nonce: randomState(),
    }),
  );
  return { expiresIn: Number(param(r.final, 'expires_in')), idToken: param(r.final, 'id_token') as string };
}

async function jwtBearer(client: CreatedClient) {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const kid = `k-${client.client_id}`;
  const issuer = `https://idp-${client.client_id}.example`;
  await fetch(`${t.adminUrl}/admin/trust/grants/jwt-bearer/issuers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      issuer,
      subject: 'svc',
      scope: ['openid'],
      jwk: { ...(await exportJWK(publicKey)), kid },
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    }),
  });
  const assertion = await new SignJWT({ jti: kid })
    .setProtectedHeader({ alg: 'ES256', kid })
    .setIssuer(issuer)
    .setSubject('svc')
    .setAudience(`${t.publicUrl}/oauth2/token`)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);
  return tokenRequest(t, client, { grant_type: JWT_BEARER, assertion });
}

describe('token lifespans', () => {
  it('follow ttl.* for every grant', async () => {
    const client = await createClient(t, { grant_types: ALL_GRANTS, response_types: ['code', 'id_token token'] });
    const code = await codeTokens(t, client, 'openid offline');
    expect(idLifetime(code.id_token as string)).toBe(1800);
    expect(await refreshLifetime(code.refresh_token as string)).toBe(48 * 3600);
    const refreshed = await refresh(t, client, code.refresh_token as string);
    expect(refreshed.body.expires_in).toBe(7200);
    expect(idLifetime(refreshed.body.id_token)).toBe(1800);
    expect(await refreshLifetime(refreshed.body.refresh_token)).toBe(48 * 3600);
    const imp = await implicit(client);
    expect([imp.expiresIn, idLifetime(imp.idToken)]).toEqual([7200, 1800]);
    expect((await tokenRequest(t, client, { grant_type: 'client_credentials' })).body.expires_in).toBe(7200);
    expect((await jwtBearer(client)).body.expires_in).toBe(7200);
  });

  it('follow the client’s lifespans per grant when set', async () => {
    const client = await createClient(t, { grant_types: ALL_GRANTS, response_types: ['code', 'id_token token'] });
    await setLifespans(client, {
      authorization_code_grant_access_token_lifespan: '11m',
      authorization_code_grant_id_token_lifespan: '12m',
      authorization_code_grant_refresh_token_lifespan: '13h',
      implicit_grant_access_token_lifespan: '14m',
      implicit_grant_id_token_lifespan: '15m',
      refresh_token_grant_access_token_lifespan: '16m',
      refresh_token_grant_id_token_lifespan: '17m',
      refresh_token_grant_refresh_token_lifespan: '18h',
      client_credentials_grant_access_token_lifespan: '19m',
      jwt_bearer_grant_access_token_lifespan: '20m',
    });
    const code = await codeTokens(t, client, 'openid offline');
    expect(Number(code.expires_in)).toBe(11 * 60);
    expect(idLifetime(code.id_token as string)).toBe(12 * 60);
    expect(await refreshLifetime(code.refresh_token as string)).toBe(13 * 3600);
    const refreshed = await refresh(t, client, code.refresh_token as string);
    expect(refreshed.body.expires_in).toBe(16 * 60);
    expect(idLifetime(refreshed.body.id_token)).toBe(17 * 60);
    expect(await refreshLifetime(refreshed.body.refresh_token)).toBe(18 * 3600);
    const imp = await implicit(client);
    expect([imp.expiresIn, idLifetime(imp.idToken)]).toEqual([14 * 60, 15 * 60]);
    expect((await tokenRequest(t, client, { grant_type: 'client_credentials' })).body.expires_in).toBe(19 * 60);
    expect((await jwtBearer(client)).body.expires_in).toBe(20 * 60);
  });
});
