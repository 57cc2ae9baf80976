/**
 * The OAuth 2.0 client record. Its field names are the RFC 7591 / Hydra `OAuth2Client` names on
 * purpose: the record *is* that metadata, and the wire, the JSON Patch document and the table all
 * speak it, so renaming 45 fields three times would only add places to get one wrong.
 */

/** Per-grant token lifespans (Hydra's `Lifespans`), in the order Hydra renders them. */
export const LIFESPAN_FIELDS = [
  'authorization_code_grant_access_token_lifespan',
  'authorization_code_grant_id_token_lifespan',
  'authorization_code_grant_refresh_token_lifespan',
  'client_credentials_grant_access_token_lifespan',
  'implicit_grant_access_token_lifespan',
  'implicit_grant_id_token_lifespan',
  'jwt_bearer_grant_access_token_lifespan',
  'refresh_token_grant_id_token_lifespan',
  'refresh_token_grant_access_token_lifespan',
  'refresh_token_grant_refresh_token_lifespan',
  'device_authorization_grant_id_token_lifespan',
  'device_authorization_grant_access_token_lifespan',
  'device_authorization_grant_refresh_token_lifespan',
] as const;

export type LifespanField = (typeof LIFESPAN_FIELDS)[number];

/** Milliseconds; null means the global TTL (`ttl.*`) applies. */
export type Lifespans = Record<LifespanField, number | null>;

export const TOKEN_ENDPOINT_AUTH_METHODS = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
  'none',
  // RFC 8705 §2.1, §2.2: mutual-TLS client authentication.
  'tls_client_auth',
  'self_signed_tls_client_auth',
] as const;

/** RFC 8705 §2.1.2: the certificate fields a `tls_client_auth` client registers (exactly one). */
export const TLS_CLIENT_AUTH_FIELDS = [
  'tls_client_auth_subject_dn',
  'tls_client_auth_san_dns',
  'tls_client_auth_san_uri',
  'tls_client_auth_san_ip',
  'tls_client_auth_san_email',
] as const;

export type TlsClientAuthField = (typeof TLS_CLIENT_AUTH_FIELDS)[number];

/** A JSON Web Key Set as registered by the client (`{}` when none). */
export interface ClientJwks {
  keys?: Array<Record<string, unknown>>;
  [k: string]: unknown;
}

/** The client fields a caller sets (create, PUT, PATCH, dynamic registration). */
export interface ClientFields extends Lifespans {
  client_id: string;
  client_name: string;
  /** null: not given (Hydra echoes `null` on write and `[]` after a read). */
  redirect_uris: string[] | null;
  grant_types: string[] | null;
  response_types: string[] | null;
  scope: string;
  audience: string[];
  owner: string;
  policy_uri: string;
  tos_uri: string;
  client_uri: string;
  logo_uri: string;
  contacts: string[] | null;
  allowed_cors_origins: string[];
  subject_type: string;
  sector_identifier_uri: string;
  jwks: ClientJwks;
  jwks_uri: string;
  token_endpoint_auth_method: string;
  token_endpoint_auth_signing_alg: string;
  request_uris: string[];
  request_object_signing_alg: string;
  userinfo_signed_response_alg: string;
  frontchannel_logout_uri: string;
  frontchannel_logout_session_required: boolean;
  backchannel_logout_uri: string;
  backchannel_logout_session_required: boolean;
  post_logout_redirect_uris: string[];
  /** Any JSON value; undefined when the caller did not send it. */
  metadata: unknown;
  access_token_strategy: string;
  skip_consent: boolean;
  skip_logout_consent: boolean | null;
  /** RFC 9126 §6: authorization requests must be pushed (`POST /oauth2/par`) first. */
  require_pushed_authorization_requests: boolean;
  /** RFC 9449 §5.2: token requests must carry a DPoP proof. */
  dpop_bound_access_tokens: boolean;
  /** RFC 8705 §2.1.2: the subject DN (RFC 4514) or SAN a `tls_client_auth` client's certificate carries ('' when not registered). */
  tls_client_auth_subject_dn: string;
  tls_client_auth_san_dns: string;
  tls_client_auth_san_uri: string;
  tls_client_auth_san_ip: string;
  tls_client_auth_san_email: string;
  /** RFC 8705 §3.4: access tokens are bound to the token request's client certificate. */
  tls_client_certificate_bound_access_tokens: boolean;
}

/** A decoded write request: the fields plus the plaintext secret ('' when not given). */
export interface ClientDraft extends ClientFields {
  client_secret: string;
}

export interface Client extends ClientFields {
  created_at: Date;
  updated_at: Date;
}

/** What the store keeps beside the client. Never leaves the service. */
export interface StoredClient {
  client: Client;
  /** Self-describing pbkdf2/bcrypt hash, or null for a client that has no secret. */
  secretHash: string | null;
  /** HMAC signature of the registration access token ('' when none). */
  registrationSignature: string;
  /** Created through dynamic registration: its outbound requests refuse internal addresses. */
  dynamic?: boolean;
}

export const isPublicClient = (c: Pick<ClientFields, 'token_endpoint_auth_method'>) =>
  c.token_endpoint_auth_method === 'none';
