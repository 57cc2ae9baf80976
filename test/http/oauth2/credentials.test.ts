/**
 * Verifiable credentials (`POST /credentials`, Hydra's createVerifiableCredential): the `c_nonce` in
 * the token response, the holder's proof JWT, the signed credential, and every refusal.
 */
import { Configuration, OidcApi } from '@ory/hydra-client';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JSONWebKeySet, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';
import { codeTokens } from '../../helpers/tokens.ts';

const SCOPE = 'openid userinfo_credential_draft_00';

describe('POST /credentials', () => {
  let t: TestServer;
  let client: CreatedClient;
  let issuer: string;
  let holder: Awaited<ReturnType<typeof generateKeyPair>>;
  let holderJwk: Awaited<ReturnType<typeof exportJWK>>;
  beforeAll(async () => {
    t = await startTestServer();
    issuer = t.container.config.urls.self.issuer;
    client = await createClient(t, { scope: 'openid offline userinfo_credential_draft_00' });
    holder = await generateKeyPair('ES256');
    holderJwk = await exportJWK(holder.publicKey);
  });
  afterAll(() => t?.close());

  const tokens = () =>
    codeTokens(t, client, SCOPE, {
      consent: (q) => ({ grant_scope: q.requested_scope, session: { id_token: { email: 'alice@example.com' } } }),
    });

  const proof = (nonce: string, o: { typ?: string; aud?: string; key?: typeof holder.privateKey } = {}) =>
    new SignJWT({ nonce })
      .setProtectedHeader({ alg: 'ES256', typ: o.typ ?? 'openid4vci-proof+jwt', jwk: holderJwk })
      .setAudience(o.aud ?? issuer)
      .setIssuedAt()
      .sign(o.key ?? holder.privateKey);

  const post = (accessToken: string | undefined, body: unknown) =>
    fetch(`${t.publicUrl}/credentials`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}),
      },
      body: JSON.stringify(body),
    });

  it('issues a signed JWT VC for the token’s subject and consented claims (through the SDK)', async () => {
    const tok = await tokens();
    expect(typeof tok.c_nonce_draft_00).toBe('string');
    expect(tok.c_nonce_expires_in_draft_00).toBe(3600);
    // The SDK declares no security for this operation: the bearer token goes in as a header.
    const api = new OidcApi(new Configuration({ basePath: t.publicUrl }));
    const { data, status } = await api.createVerifiableCredential(
      {
        createVerifiableCredentialRequestBody: {
          format: 'jwt_vc_json',
          types: ['VerifiableCredential', 'UserInfoCredential'],
          proof: { proof_type: 'jwt', jwt: await proof(tok.c_nonce_draft_00 as string) },
        },
      },
      { headers: { Authorization: `Bearer ${tok.access_token}` } },
    );
    expect(status).toBe(200);
    expect(data.format).toBe('jwt_vc_json');
    // The key set read once (a remote set would add a 5 s fetch deadline of its own to the test).
    const jwks = createLocalJWKSet(
      (await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet,
    );
    const { payload } = await jwtVerify(data.credential_draft_00 as string, jwks, { issuer });
    const did = payload.sub as string;
    expect(did.startsWith('did:jwk:')).toBe(true);
    expect(JSON.parse(Buffer.from(did.slice('did:jwk:'.length), 'base64url').toString())).toEqual(holderJwk);
    expect((payload.exp as number) - (payload.iat as number)).toBe(3600);
    expect(payload.vc).toEqual({
      '@context': ['https://www.w3.org/2018/credentials/v1'],
      type: ['VerifiableCredential', 'UserInfoCredential'],
      credentialSubject: { id: did, sub: 'alice', email: 'alice@example.com' },
    });
    // The nonce is single-use.
    const again = await post(tok.access_token, {
      format: 'jwt_vc_json',
      proof: { proof_type: 'jwt', jwt: await proof(tok.c_nonce_draft_00 as string) },
    });
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error_description: string }).error_description).toContain('already been used');
  });

  it('answers a request without proof with a fresh c_nonce (priming), which then works', async () => {
    const tok = await tokens();
    const prime = await post(tok.access_token, { format: 'jwt_vc_json' });
    expect(prime.status).toBe(400);
    const body = (await prime.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'missing_proof', format: 'jwt_vc', c_nonce_expires_in: 3600 });
    const ok = await post(tok.access_token, {
      format: 'jwt_vc_json',
      proof: { proof_type: 'jwt', jwt: await proof(body.c_nonce as string) },
    });
    expect(ok.status).toBe(200);
  });

  it('refuses bad proofs, foreign nonces, other formats and missing tokens', async () => {
    const tok = await tokens();
    const other = await tokens();
    const nonce = tok.c_nonce_draft_00 as string;
    const send = async (jwt: string, format = 'jwt_vc_json', token: string | null = tok.access_token as string) => {
      const r = await post(token ?? undefined, { format, proof: { proof_type: 'jwt', jwt } });
      return { status: r.status, body: (await r.json()) as { error: string; error_description: string } };
    };
    const wrongTyp = await send(await proof(nonce, { typ: 'JWT' }));
    expect([wrongTyp.status, wrongTyp.body.error]).toEqual([400, 'invalid_request']);
    expect((await send(await proof(nonce, { aud: 'https://elsewhere.example' }))).status).toBe(400);
    const stranger = await generateKeyPair('ES256');
    expect((await send(await proof(nonce, { key: stranger.privateKey }))).body.error_description).toContain(
      "signed with the key in its 'jwk' header",
    );
    expect((await send(await proof(other.c_nonce_draft_00 as string))).body.error_description).toContain(
      'The nonce is invalid.',
    );
    expect((await send(await proof(nonce), 'ldp_vc')).body.error_description).toContain("format 'ldp_vc'");
    expect((await send('not-a-jwt')).status).toBe(400);
    expect((await send(await proof(nonce), 'jwt_vc_json', null)).status).toBe(401);
    expect((await send(await proof(nonce), 'jwt_vc_json', 'ory_at_nope.nope')).status).toBe(401);
    // Nothing was consumed by the refusals: the right proof still works.
    expect((await send(await proof(nonce))).status).toBe(200);
  });

  it('puts no c_nonce in token responses without userinfo_credential_draft_00', async () => {
    const tok = await codeTokens(t, client, 'openid offline');
    expect(tok.c_nonce_draft_00).toBeUndefined();
  });
});
