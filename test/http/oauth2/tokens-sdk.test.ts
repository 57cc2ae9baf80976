/** `@ory/hydra-client` (OAuth2Api) against the token admin and public endpoints: the SDK parses our answers. */
import { Configuration, OAuth2Api } from '@ory/hydra-client';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { adminApi, createClient } from '../../helpers/oauth2.ts';
import { codeTokens, isActive } from '../../helpers/tokens.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

describe('@ory/hydra-client OAuth2Api', () => {
  it('trusts, reads, lists and deletes a JWT-bearer issuer', async () => {
    const api = adminApi(t);
    const { publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'sdk-key', alg: 'ES256', use: 'sig' };
    const expires = '2030-01-01T00:00:00Z';
    const { data: made } = await api.trustOAuth2JwtGrantIssuer({
      trustOAuth2JwtGrantIssuer: {
        issuer: 'https://sdk.example',
        subject: 'svc',
        scope: ['read'],
        jwk: jwk as never,
        expires_at: expires,
      },
    });
    expect(made).toMatchObject({
      issuer: 'https://sdk.example',
      public_key: { set: 'https://sdk.example', kid: 'sdk-key' },
    });
    const { data: got } = await api.getTrustedOAuth2JwtGrantIssuer({ id: made.id as string });
    expect(got.expires_at).toBe(expires);
    const { data: list } = await api.listTrustedOAuth2JwtGrantIssuers({ issuer: 'https://sdk.example' });
    expect(list.map((x) => x.id)).toEqual([made.id]);
    await api.deleteTrustedOAuth2JwtGrantIssuer({ id: made.id as string });
    await expect(api.getTrustedOAuth2JwtGrantIssuer({ id: made.id as string })).rejects.toMatchObject({
      response: { status: 404 },
    });
  });

  it('introspects, revokes and deletes tokens', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    const api = adminApi(t);
    const { data } = await api.introspectOAuth2Token({ token: tok.access_token as string });
    expect(data).toMatchObject({ active: true, sub: 'alice', client_id: client.client_id, token_use: 'access_token' });
    await api.deleteOAuth2Token({ clientId: client.client_id });
    expect((await api.introspectOAuth2Token({ token: tok.access_token as string })).data.active).toBe(false);
    // client_secret_basic: the SDK sends the configured username/password as HTTP Basic.
    const pub = new OAuth2Api(
      new Configuration({
        basePath: t.publicUrl,
        username: client.client_id,
        password: client.client_secret as string,
      }),
    );
    await pub.revokeOAuth2Token({ token: tok.refresh_token as string });
    expect(await isActive(t, tok.refresh_token as string)).toBe(false);
  });
});
