/**
 * What the login/consent and token features need from the client service and the key service.
 * Kept small so the flows do not depend on how clients and keys are stored.
 */
import type { JWK, SignJWT } from 'jose';

/** The client lifespans (milliseconds; null: the global TTL applies). */
export type LifespanKey =
  | 'authorization_code_grant_access_token_lifespan'
  | 'authorization_code_grant_id_token_lifespan'
  | 'authorization_code_grant_refresh_token_lifespan'
  | 'implicit_grant_access_token_lifespan'
  | 'implicit_grant_id_token_lifespan'
  | 'client_credentials_grant_access_token_lifespan'
  | 'jwt_bearer_grant_access_token_lifespan'
  | 'refresh_token_grant_id_token_lifespan'
  | 'refresh_token_grant_access_token_lifespan'
  | 'refresh_token_grant_refresh_token_lifespan'
  | 'device_authorization_grant_id_token_lifespan'
  | 'device_authorization_grant_access_token_lifespan'
  | 'device_authorization_grant_refresh_token_lifespan';

/** What a `tls_client_auth` client registered (`tls_client_auth_<name>`, RFC 8705 §2.1.2). */
export type TlsClientAuthName = 'subject_dn' | 'san_dns' | 'san_uri' | 'san_ip' | 'san_email';

export interface FlowClient {
  id: string;
  redirectUris: string[];
  /** Empty means `["authorization_code"]`. */
  grantTypes: string[];
  /** Empty means `["code"]`. */
  responseTypes: string[];
  /** Space separated. */
  scope: string;
  audience: string[];
  tokenEndpointAuthMethod: string;
  tokenEndpointAuthSigningAlg: string;
  jwks: { keys: JWK[] } | undefined;
  jwksUri: string;
  requestUris: string[];
  requestObjectSigningAlg: string;
  userinfoSignedResponseAlg: string;
  subjectType: string;
  sectorIdentifierUri: string;
  /** `opaque`, `jwt` or empty (the global strategy). */
  accessTokenStrategy: string;
  skipConsent: boolean;
  /** RFC 9126 §6 (`require_pushed_authorization_requests`). */
  requirePushedAuthorizationRequests: boolean;
  /** RFC 9449 §5.2 (`dpop_bound_access_tokens`). */
  dpopBoundAccessTokens: boolean;
  /**
   * RFC 8705 §2.1.2: what a `tls_client_auth` client's certificate must carry (the one registered
   * `tls_client_auth_*` field); undefined for other clients.
   */
  tlsClientAuth?: { field: TlsClientAuthName; value: string };
  /** RFC 8705 §3.4 (`tls_client_certificate_bound_access_tokens`). */
  tlsClientCertificateBoundAccessTokens: boolean;
  /** Exact-match targets of RP-initiated logout. */
  postLogoutRedirectUris: string[];
  /** '' when the client takes no part in front- / back-channel logout. */
  frontchannelLogoutUri: string;
  backchannelLogoutUri: string;
  lifespans: Partial<Record<LifespanKey, number | null>>;
  /** Created through dynamic registration: its outbound requests refuse internal addresses. */
  dynamic?: boolean;
  /** Hydra's wire JSON of the client, secret removed (the `client` of login/consent requests). */
  wire: Record<string, unknown>;
}

export interface ClientPort {
  /** The client, or undefined when unknown. */
  get(id: string): Promise<FlowClient | undefined>;
  /**
   * Checks the secret of a client `get` returned, in constant time (false for clients without a
   * secret). `undefined` (an unknown client) costs the same as a wrong secret and is false.
   */
  verifySecret(client: FlowClient | undefined, secret: string): Promise<boolean>;
}

export type KeySetName = 'hydra.openid.id-token' | 'hydra.jwt.access-token';

export interface SigningKey {
  kid: string;
  alg: string;
  key: Parameters<SignJWT['sign']>[0];
}

export interface KeyPort {
  /** The signing key of a set (the newest key with private material; generated when missing). */
  signingKey(set: KeySetName): Promise<SigningKey>;
  /** The public keys of a set, for verifying tokens gatehouse signed (id_token_hint). */
  publicKeys(set: KeySetName): Promise<JWK[]>;
}

export const isPublicClient = (c: FlowClient) => c.tokenEndpointAuthMethod === 'none';
export const clientGrantTypes = (c: FlowClient) => (c.grantTypes.length ? c.grantTypes : ['authorization_code']);
export const clientResponseTypes = (c: FlowClient) => (c.responseTypes.length ? c.responseTypes : ['code']);
