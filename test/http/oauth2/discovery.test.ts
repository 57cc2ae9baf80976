import { Configuration, OidcApi } from '@ory/hydra-client';
import * as client from 'openid-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';

describe('OpenID Connect discovery', () => {
  const open: TestServer[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  const start = async (overrides: Record<string, unknown> = {}) => {
    const s = await startTestServer({ overrides });
    open.push(s);
    return s;
  };
  const discover = async (s: TestServer, path = '/.well-known/openid-configuration') => {
    const r = await fetch(`${s.publicUrl}${path}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    return (await r.json()) as Record<string, unknown>;
  };

  it('publishes Hydra 26.2’s document for the default configuration (with oauth2.pkce.allow_plain), plus prompt_values_supported, authorization_response_iss_parameter_supported, the PAR fields and DPoP algorithms', async () => {
    const s = await start({ 'oauth2.pkce.allow_plain': true });
    const P = s.publicUrl;
    const doc = await discover(s);
    expect(doc).toEqual({
      issuer: `${P}/`,
      authorization_endpoint: `${P}/oauth2/auth`,
      device_authorization_endpoint: `${P}/oauth2/device/auth`,
      token_endpoint: `${P}/oauth2/token`,
      jwks_uri: `${P}/.well-known/jwks.json`,
      subject_types_supported: ['public'],
      response_types_supported: ['code', 'code id_token', 'id_token', 'token id_token', 'token', 'token id_token code'],
      claims_supported: ['sub'],
      grant_types_supported: [
        'authorization_code',
        'implicit',
        'client_credentials',
        'refresh_token',
        'urn:ietf:params:oauth:grant-type:device_code',
        'urn:ietf:params:oauth:grant-type:token-exchange',
      ],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      userinfo_endpoint: `${P}/userinfo`,
      scopes_supported: ['offline_access', 'offline', 'openid'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'private_key_jwt', 'none'],
      userinfo_signing_alg_values_supported: ['none', 'RS256'],
      id_token_signing_alg_values_supported: ['RS256'],
      id_token_signed_response_alg: ['RS256'],
      userinfo_signed_response_alg: ['RS256'],
      request_parameter_supported: true,
      request_uri_parameter_supported: true,
      require_request_uri_registration: true,
      claims_parameter_supported: true,
      revocation_endpoint: `${P}/oauth2/revoke`,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
      frontchannel_logout_supported: true,
      frontchannel_logout_session_supported: true,
      end_session_endpoint: `${P}/oauth2/sessions/logout`,
      request_object_signing_alg_values_supported: ['none', 'RS256', 'ES256'],
      code_challenge_methods_supported: ['plain', 'S256'],
      prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
      credentials_endpoint_draft_00: `${P}/credentials`,
      credentials_supported_draft_00: [
        {
          format: 'jwt_vc_json',
          types: ['VerifiableCredential', 'UserInfoCredential'],
          cryptographic_binding_methods_supported: ['jwk'],
          cryptographic_suites_supported: [
            'PS256',
            'RS256',
            'ES256',
            'PS384',
            'RS384',
            'ES384',
            'PS512',
            'RS512',
            'ES512',
            'EdDSA',
          ],
        },
      ],
      authorization_response_iss_parameter_supported: true,
      pushed_authorization_request_endpoint: `${P}/oauth2/par`,
      require_pushed_authorization_requests: false,
      dpop_signing_alg_values_supported: [
        'ES256',
        'ES384',
        'ES512',
        'PS256',
        'PS384',
        'PS512',
        'RS256',
        'RS384',
        'RS512',
        'EdDSA',
      ],
    });
    expect(doc).not.toHaveProperty('registration_endpoint');
    expect(await discover(s, '/.well-known/oauth-authorization-server')).toEqual(doc);
    // The ID-token set was generated on the way (the algorithm comes from its signing key).
    const { rows } = await s.container.pool.query(
      "select count(*)::int as n from jwk_keys where sid = 'hydra.openid.id-token'",
    );
    expect(rows[0].n).toBe(1);
  });

  it('follows the configuration: URLs, overrides, claims, scopes, subject types, registration endpoint', async () => {
    const s = await start({
      'urls.self.issuer': 'https://auth.example.com/tenant/',
      'urls.self.public': 'https://public.example.com/base',
      'webfinger.oidc_discovery.client_registration_url': 'https://auth.example.com/register',
      'webfinger.oidc_discovery.token_url': 'https://tokens.example.com/t',
      'webfinger.oidc_discovery.jwks_url': 'https://keys.example.com/jwks',
      'webfinger.oidc_discovery.auth_url': 'https://login.example.com/auth',
      'webfinger.oidc_discovery.userinfo_url': 'https://me.example.com/userinfo',
      'webfinger.oidc_discovery.device_authorization_url': 'https://device.example.com/go',
      'webfinger.oidc_discovery.supported_claims': ['email', 'sub', 'name'],
      'webfinger.oidc_discovery.supported_scope': ['email', 'openid', 'profile'],
      'oidc.subject_identifiers.supported_types': ['pairwise', 'public'],
      'oidc.subject_identifiers.pairwise.salt': 'some-salt-value',
    });
    const doc = await discover(s);
    expect(doc).toMatchObject({
      issuer: 'https://auth.example.com/tenant/',
      authorization_endpoint: 'https://login.example.com/auth',
      device_authorization_endpoint: 'https://device.example.com/go',
      registration_endpoint: 'https://auth.example.com/register',
      token_endpoint: 'https://tokens.example.com/t',
      jwks_uri: 'https://keys.example.com/jwks',
      userinfo_endpoint: 'https://me.example.com/userinfo',
      revocation_endpoint: 'https://auth.example.com/tenant/oauth2/revoke',
      end_session_endpoint: 'https://auth.example.com/tenant/oauth2/sessions/logout',
      credentials_endpoint_draft_00: 'https://public.example.com/base/credentials',
      claims_supported: ['sub', 'email', 'name'],
      scopes_supported: ['offline_access', 'offline', 'openid', 'email', 'profile'],
      subject_types_supported: ['public', 'pairwise'],
    });
  });

  it('derives endpoints from urls.self.public and drops pairwise under the JWT access-token strategy', async () => {
    const s = await start({
      'urls.self.public': 'https://public.example.com/',
      'strategies.access_token': 'jwt',
      'oidc.subject_identifiers.supported_types': ['pairwise'],
      'oidc.subject_identifiers.pairwise.salt': 'some-salt-value',
    });
    const doc = await discover(s);
    expect(doc).toMatchObject({
      authorization_endpoint: 'https://public.example.com/oauth2/auth',
      token_endpoint: 'https://public.example.com/oauth2/token',
      userinfo_endpoint: 'https://public.example.com/userinfo',
      jwks_uri: `${s.publicUrl}/.well-known/jwks.json`,
      subject_types_supported: ['public'],
    });
  });

  it('names the algorithm of the current ID-token signing key', async () => {
    const s = await start();
    const r = await fetch(`${s.adminUrl}/admin/keys/hydra.openid.id-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alg: 'ES256', kid: 'ec' }),
    });
    expect(r.status).toBe(201);
    const doc = await discover(s);
    expect(doc.id_token_signing_alg_values_supported).toEqual(['ES256']);
    expect(doc.userinfo_signing_alg_values_supported).toEqual(['none', 'ES256']);
  });

  it('is readable by the Hydra SDK and by openid-client', async () => {
    const s = await start();
    const sdk = new OidcApi(new Configuration({ basePath: s.publicUrl }));
    const { data } = await sdk.discoverOidcConfiguration();
    expect(data.issuer).toBe(`${s.publicUrl}/`);
    expect(data.token_endpoint).toBe(`${s.publicUrl}/oauth2/token`);
    const config = await client.discovery(new URL(`${s.publicUrl}/`), 'some-client', 'secret', undefined, {
      execute: [client.allowInsecureRequests],
    });
    expect(config.serverMetadata().jwks_uri).toBe(`${s.publicUrl}/.well-known/jwks.json`);
  });
});
