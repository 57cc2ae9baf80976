/**
 * OpenID Connect discovery (`/.well-known/openid-configuration`, OpenID Connect Discovery 1.0 §3): Hydra
 * 26.2's document, driven by configuration, plus `prompt_values_supported` (gatehouse accepts
 * `select_account` and handles it like `login`; Hydra 26.2 publishes no such field). The ID-token signing
 * algorithm is the one of the current `hydra.openid.id-token` signing key, generated if missing.
 */
import type { OAuth2Config } from '../deps.ts';
import { ID_TOKEN_SET, type KeyProvider } from '../jwk/provider.ts';
import { mtlsAvailable } from '../mtls-config.ts';

export interface DiscoveryService {
  getConfiguration(): Promise<OidcConfiguration>;
}

export interface CredentialSupportedDraft00 {
  format: string;
  types: string[];
  cryptographic_binding_methods_supported: string[];
  cryptographic_suites_supported: string[];
}

/** Field order follows Hydra's oidcConfiguration struct. */
export interface OidcConfiguration {
  issuer: string;
  authorization_endpoint: string;
  device_authorization_endpoint: string;
  registration_endpoint?: string;
  token_endpoint: string;
  jwks_uri: string;
  subject_types_supported: string[];
  response_types_supported: string[];
  claims_supported: string[];
  grant_types_supported: string[];
  response_modes_supported: string[];
  userinfo_endpoint: string;
  scopes_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  userinfo_signing_alg_values_supported: string[];
  id_token_signing_alg_values_supported: string[];
  id_token_signed_response_alg: string[];
  userinfo_signed_response_alg: string[];
  request_parameter_supported: boolean;
  request_uri_parameter_supported: boolean;
  require_request_uri_registration: boolean;
  claims_parameter_supported: boolean;
  revocation_endpoint: string;
  backchannel_logout_supported: boolean;
  backchannel_logout_session_supported: boolean;
  frontchannel_logout_supported: boolean;
  frontchannel_logout_session_supported: boolean;
  end_session_endpoint: string;
  request_object_signing_alg_values_supported: string[];
  code_challenge_methods_supported: string[];
  prompt_values_supported: string[];
  credentials_endpoint_draft_00: string;
  credentials_supported_draft_00: CredentialSupportedDraft00[];
  /** RFC 9207 §3: every authorization response carries `iss` (beyond Hydra, after its fields). */
  authorization_response_iss_parameter_supported: boolean;
  /** RFC 9126 §5, while pushed authorization requests are enabled. */
  pushed_authorization_request_endpoint?: string;
  require_pushed_authorization_requests?: boolean;
  /** RFC 9449 §5.1, while DPoP is enabled. */
  dpop_signing_alg_values_supported?: string[];
  /** RFC 8705 §3.3, while client certificates can arrive (mtls-config.ts `mtlsAvailable`). */
  tls_client_certificate_bound_access_tokens?: boolean;
}

/** Hydra's urlx.AppendPaths: one slash between the base path and the appended path. */
export function appendPath(base: string, path: string): string {
  const u = new URL(base);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
  return u.toString();
}

const unique = (xs: string[]) => [...new Set(xs)];

/** The advertised `token_endpoint`: the webfinger override, else `<public URL>/oauth2/token`. */
export const tokenEndpoint = (c: OAuth2Config): string =>
  c.webfinger.oidc_discovery.token_url || appendPath(c.urls.self.public, '/oauth2/token');

/** The advertised `pushed_authorization_request_endpoint` (RFC 9126 §5): `<public URL>/oauth2/par`. */
export const parEndpoint = (c: OAuth2Config): string => appendPath(c.urls.self.public, '/oauth2/par');

/** Hydra's SubjectTypesSupported: pairwise is dropped under the JWT access-token strategy; public is the fallback. */
export function subjectTypesSupported(c: OAuth2Config): string[] {
  const types = c.oidc.subject_identifiers.supported_types;
  const pairwise = types.includes('pairwise') && c.strategies.access_token !== 'jwt';
  const pub = types.includes('public') || !pairwise;
  return [...(pub ? ['public'] : []), ...(pairwise ? ['pairwise'] : [])];
}

/** Everything of the document that depends on configuration only. */
export function staticConfiguration(c: OAuth2Config, idTokenAlg: string): OidcConfiguration {
  const issuer = c.urls.self.issuer;
  const pub = c.urls.self.public;
  const w = c.webfinger.oidc_discovery;
  const mtls = mtlsAvailable(c);
  return {
    issuer,
    authorization_endpoint: w.auth_url || appendPath(pub, '/oauth2/auth'),
    device_authorization_endpoint: w.device_authorization_url || appendPath(pub, '/oauth2/device/auth'),
    ...(w.client_registration_url ? { registration_endpoint: w.client_registration_url } : {}),
    token_endpoint: tokenEndpoint(c),
    jwks_uri: w.jwks_url || appendPath(issuer, '/.well-known/jwks.json'),
    subject_types_supported: subjectTypesSupported(c),
    response_types_supported: ['code', 'code id_token', 'id_token', 'token id_token', 'token', 'token id_token code'],
    claims_supported: unique(['sub', ...w.supported_claims]),
    grant_types_supported: [
      'authorization_code',
      'implicit',
      'client_credentials',
      'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code',
      // Beyond Hydra: token exchange (RFC 8693).
      'urn:ietf:params:oauth:grant-type:token-exchange',
    ],
    response_modes_supported: ['query', 'fragment', 'form_post'],
    userinfo_endpoint: w.userinfo_url || appendPath(pub, '/userinfo'),
    scopes_supported: unique(['offline_access', 'offline', 'openid', ...w.supported_scope]),
    token_endpoint_auth_methods_supported: [
      'client_secret_post',
      'client_secret_basic',
      'private_key_jwt',
      'none',
      // RFC 8705 §2.1.1, §2.2.1: only where a client certificate can reach the endpoints.
      ...(mtls ? ['tls_client_auth', 'self_signed_tls_client_auth'] : []),
    ],
    userinfo_signing_alg_values_supported: ['none', idTokenAlg],
    id_token_signing_alg_values_supported: [idTokenAlg],
    id_token_signed_response_alg: [idTokenAlg],
    userinfo_signed_response_alg: [idTokenAlg],
    request_parameter_supported: true,
    request_uri_parameter_supported: true,
    require_request_uri_registration: true,
    // OpenID Connect Core §5.5 (Hydra 26 says false and ignores the parameter).
    claims_parameter_supported: true,
    revocation_endpoint: appendPath(issuer, '/oauth2/revoke'),
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    frontchannel_logout_supported: true,
    frontchannel_logout_session_supported: true,
    end_session_endpoint: appendPath(issuer, '/oauth2/sessions/logout'),
    request_object_signing_alg_values_supported: ['none', 'RS256', 'ES256'],
    // Hydra 26 advertises `plain` although it refuses it; only what is accepted is listed here.
    code_challenge_methods_supported: c.oauth2.pkce.allow_plain ? ['plain', 'S256'] : ['S256'],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    credentials_endpoint_draft_00: w.verifiable_credentials_url || appendPath(pub, '/credentials'),
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
    ...(c.oauth2.pushed_authorization_requests.enabled
      ? {
          pushed_authorization_request_endpoint: parEndpoint(c),
          require_pushed_authorization_requests: c.oauth2.pushed_authorization_requests.required,
        }
      : {}),
    ...(c.oauth2.dpop.enabled ? { dpop_signing_alg_values_supported: c.oauth2.dpop.signing_algs } : {}),
    // The endpoints are the same with and without a certificate: no `mtls_endpoint_aliases` (§5).
    ...(mtls ? { tls_client_certificate_bound_access_tokens: true } : {}),
  };
}

export function createDiscoveryService(config: OAuth2Config, keys: KeyProvider): DiscoveryService {
  return {
    async getConfiguration() {
      const { alg } = await keys.getSigningKey(ID_TOKEN_SET);
      return staticConfiguration(config, alg);
    },
  };
}
