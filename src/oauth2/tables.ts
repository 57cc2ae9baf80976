/**
 * OAuth 2.0's tables (Hydra's, plus the ones Gatehouse adds), typed for kysely: one interface per
 * table of sql/ that this domain owns. Changes in the same commit as the migration; `src/database.ts`
 * joins them with the core's and directory sync's, and test/http/core/schema.test.ts compares the
 * joined column lists with information_schema.
 *
 * The domain's code sees the core's tables and these (`Database`, `Executor`, `Db` below), never
 * directory sync's.
 */
import type { ColumnType, Generated } from 'kysely';
import type { CoreDatabase, Json, Timestamp } from '../core/db/schema.ts';
import type { Db as CoreDb, Executor as CoreExecutor } from '../core/db/tx.ts';

/** The network (Hydra's `nid`) every OAuth 2.0 row belongs to (inserted by sql/0001). */
export const DEFAULT_NETWORK_ID = '00000000-0000-4000-8000-000000000000';

export interface NetworksTable {
  id: string;
  created_at: Generated<Date>;
}

export interface LoginSessionsTable {
  nid: string;
  id: string;
  subject: string;
  authenticated_at: Timestamp;
  remember: boolean;
  expires_at: Timestamp;
  identity_provider_session_id: string;
}

export interface FlowsTable {
  nid: string;
  consent_request_id: string;
  login_challenge_id: string;
  client_id: string;
  subject: string;
  login_session_id: string;
  request_url: string;
  requested_scope: Json<string[]>;
  requested_audience: Json<string[]>;
  requested_at: Timestamp;
  authenticated_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  oidc_context: Json<Record<string, unknown>>;
  acr: string;
  amr: Json<string[]>;
  context: Json<unknown>;
  force_subject_identifier: string;
  consent_skip: boolean;
  granted_scope: Json<string[]>;
  granted_audience: Json<string[]>;
  remember: boolean;
  remember_for: number;
  handled_at: Timestamp;
  expires_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  session_data: string;
}

export interface UsedVerifiersTable {
  nid: string;
  id: string;
  expires_at: Timestamp;
}

/** Pushed authorization requests (RFC 9126), keyed by the HMAC signature of their `request_uri`. */
export interface PushedRequestsTable {
  nid: string;
  signature: string;
  client_id: string;
  /** The validated request parameters (JSON; sealed when session data is encrypted at rest). */
  params: string;
  expires_at: Timestamp;
  /** When the handle started its flow; null while unused. */
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** Device authorization requests (RFC 8628), keyed by the device code's HMAC signature. */
export interface DeviceRequestsTable {
  nid: string;
  signature: string;
  user_code_signature: string;
  request_id: string;
  client_id: string;
  subject: Generated<string>;
  requested_scope: Json<string[]>;
  granted_scope: Json<string[]>;
  requested_audience: Json<string[]>;
  granted_audience: Json<string[]>;
  requested_at: Timestamp;
  expires_at: Timestamp;
  state: Generated<'pending' | 'accepted' | 'rejected' | 'issued'>;
  last_polled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  session_data: Generated<string>;
}

export interface DeviceChallengeAttemptsTable {
  nid: string;
  challenge_id: string;
  attempts: Generated<number>;
  expires_at: Timestamp;
}

export interface UsedConsentsTable {
  nid: string;
  consent_request_id: string;
  expires_at: Timestamp;
}

/** Columns shared by the three token tables. */
interface TokenColumns {
  nid: string;
  signature: string;
  request_id: string;
  client_id: string;
  subject: string;
  requested_scope: Json<string[]>;
  granted_scope: Json<string[]>;
  requested_audience: Json<string[]>;
  granted_audience: Json<string[]>;
  requested_at: Timestamp;
  session_data: string;
}

export interface AuthorizationCodesTable extends TokenColumns {
  redirect_uri: string;
  code_challenge: string;
  code_challenge_method: string;
  expires_at: Timestamp;
  active: Generated<boolean>;
}

export interface AccessTokensTable extends TokenColumns {
  expires_at: Timestamp;
}

export interface RefreshTokensTable extends TokenColumns {
  expires_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  access_token_signature: Generated<string>;
  active: Generated<boolean>;
  first_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** NULL (rows from before the column, or imported from Hydra) counts as 0 (sql/0050). */
  used_times: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Trusted JWT-bearer issuers (sql/0051); the key is `jwk_keys` (key_set, key_id). */
export interface TrustedJwtBearerIssuersTable {
  id: string;
  nid: string;
  issuer: string;
  subject: string;
  allow_any_subject: boolean;
  scope: Json<string[]>;
  key_set: string;
  key_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface JtiBlacklistTable {
  nid: string;
  signature: string;
  expires_at: Timestamp;
}

/** JSON Web Keys (sql/0020). `keydata` is the sealed JWK (src/core/crypto/aead.ts), never plaintext. */
export interface JwkKeysTable {
  id: Generated<number>;
  nid: string;
  sid: string;
  kid: string;
  keydata: string;
  created_at: Timestamp;
}

/** Row locks that serialise automatic key-set generation across processes (sql/0020). */
export interface JwkSetLocksTable {
  nid: string;
  sid: string;
}

/** OAuth 2.0 clients (sql/0010). Lifespans are milliseconds; NULL means the global TTL. */
export interface Oauth2ClientsTable {
  nid: string;
  id: string;
  client_name: string;
  client_secret_hash: string | null;
  redirect_uris: Json<string[]>;
  grant_types: Json<string[]>;
  response_types: Json<string[]>;
  scope: string;
  audience: Json<string[]>;
  owner: string;
  policy_uri: string;
  tos_uri: string;
  client_uri: string;
  logo_uri: string;
  contacts: Json<string[]>;
  allowed_cors_origins: Json<string[]>;
  subject_type: string;
  sector_identifier_uri: string;
  jwks: Json<Record<string, unknown>>;
  jwks_uri: string;
  token_endpoint_auth_method: string;
  token_endpoint_auth_signing_alg: string;
  request_uris: Json<string[]>;
  request_object_signing_alg: string;
  userinfo_signed_response_alg: string;
  frontchannel_logout_uri: string;
  frontchannel_logout_session_required: boolean;
  backchannel_logout_uri: string;
  backchannel_logout_session_required: boolean;
  post_logout_redirect_uris: Json<string[]>;
  metadata: Json<unknown>;
  access_token_strategy: string;
  skip_consent: boolean;
  skip_logout_consent: boolean | null;
  registration_access_token_signature: string;
  /** Created through dynamic registration (outbound requests refuse internal addresses). */
  dynamic_registration: ColumnType<boolean, boolean | undefined, boolean>;
  /** RFC 9126 §6: authorization requests of this client must be pushed first. */
  require_pushed_authorization_requests: ColumnType<boolean, boolean | undefined, boolean>;
  /** RFC 9449 §5.2: token requests of this client must carry a DPoP proof. */
  dpop_bound_access_tokens: ColumnType<boolean, boolean | undefined, boolean>;
  /** RFC 8705 §2.1.2: the certificate a `tls_client_auth` client presents ('' when not registered). */
  tls_client_auth_subject_dn: ColumnType<string, string | undefined, string>;
  tls_client_auth_san_dns: ColumnType<string, string | undefined, string>;
  tls_client_auth_san_uri: ColumnType<string, string | undefined, string>;
  tls_client_auth_san_ip: ColumnType<string, string | undefined, string>;
  tls_client_auth_san_email: ColumnType<string, string | undefined, string>;
  /** RFC 8705 §3.4: access tokens are bound to the token request's client certificate. */
  tls_client_certificate_bound_access_tokens: ColumnType<boolean, boolean | undefined, boolean>;
  authorization_code_grant_access_token_lifespan: number | null;
  authorization_code_grant_id_token_lifespan: number | null;
  authorization_code_grant_refresh_token_lifespan: number | null;
  client_credentials_grant_access_token_lifespan: number | null;
  implicit_grant_access_token_lifespan: number | null;
  implicit_grant_id_token_lifespan: number | null;
  jwt_bearer_grant_access_token_lifespan: number | null;
  refresh_token_grant_id_token_lifespan: number | null;
  refresh_token_grant_access_token_lifespan: number | null;
  refresh_token_grant_refresh_token_lifespan: number | null;
  device_authorization_grant_id_token_lifespan: number | null;
  device_authorization_grant_access_token_lifespan: number | null;
  device_authorization_grant_refresh_token_lifespan: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OAuth2Tables {
  networks: NetworksTable;
  oauth2_login_sessions: LoginSessionsTable;
  oauth2_flows: FlowsTable;
  oauth2_used_consents: UsedConsentsTable;
  oauth2_used_verifiers: UsedVerifiersTable;
  oauth2_pushed_requests: PushedRequestsTable;
  oauth2_device_requests: DeviceRequestsTable;
  oauth2_device_challenge_attempts: DeviceChallengeAttemptsTable;
  oauth2_authorization_codes: AuthorizationCodesTable;
  oauth2_access_tokens: AccessTokensTable;
  oauth2_refresh_tokens: RefreshTokensTable;
  oauth2_jti_blacklist: JtiBlacklistTable;
  oauth2_trusted_jwt_bearer_issuers: TrustedJwtBearerIssuersTable;
  jwk_keys: JwkKeysTable;
  jwk_set_locks: JwkSetLocksTable;
  oauth2_clients: Oauth2ClientsTable;
}

/** What OAuth 2.0's code sees of the database: the core's tables and its own. */
export type Database = CoreDatabase & OAuth2Tables;
export type Executor = CoreExecutor<Database>;
/** The database handle services hold (they open transactions on it with `withTx`). */
export type Db = CoreDb<Database>;

const TOKEN_COLUMNS = [
  'nid',
  'signature',
  'request_id',
  'client_id',
  'subject',
  'requested_scope',
  'granted_scope',
  'requested_audience',
  'granted_audience',
  'requested_at',
  'expires_at',
  'session_data',
];

/** Column lists per table, compared with information_schema by test/http/core/schema.test.ts. */
export const OAUTH2_TABLE_COLUMNS: Record<keyof OAuth2Tables, string[]> = {
  networks: ['id', 'created_at'],
  oauth2_login_sessions: [
    'nid',
    'id',
    'subject',
    'authenticated_at',
    'remember',
    'expires_at',
    'identity_provider_session_id',
  ],
  oauth2_flows: [
    'nid',
    'consent_request_id',
    'login_challenge_id',
    'client_id',
    'subject',
    'login_session_id',
    'request_url',
    'requested_scope',
    'requested_audience',
    'requested_at',
    'authenticated_at',
    'oidc_context',
    'acr',
    'amr',
    'context',
    'force_subject_identifier',
    'consent_skip',
    'granted_scope',
    'granted_audience',
    'remember',
    'remember_for',
    'handled_at',
    'expires_at',
    'session_data',
  ],
  oauth2_used_consents: ['nid', 'consent_request_id', 'expires_at'],
  oauth2_used_verifiers: ['nid', 'id', 'expires_at'],
  oauth2_pushed_requests: ['nid', 'signature', 'client_id', 'params', 'expires_at', 'used_at'],
  oauth2_device_requests: [
    'nid',
    'signature',
    'user_code_signature',
    'request_id',
    'client_id',
    'subject',
    'requested_scope',
    'granted_scope',
    'requested_audience',
    'granted_audience',
    'requested_at',
    'expires_at',
    'state',
    'last_polled_at',
    'session_data',
  ],
  oauth2_device_challenge_attempts: ['nid', 'challenge_id', 'attempts', 'expires_at'],
  oauth2_authorization_codes: [...TOKEN_COLUMNS, 'redirect_uri', 'code_challenge', 'code_challenge_method', 'active'],
  oauth2_access_tokens: TOKEN_COLUMNS,
  oauth2_refresh_tokens: [...TOKEN_COLUMNS, 'access_token_signature', 'active', 'first_used_at', 'used_times'],
  oauth2_jti_blacklist: ['nid', 'signature', 'expires_at'],
  oauth2_trusted_jwt_bearer_issuers: [
    'id',
    'nid',
    'issuer',
    'subject',
    'allow_any_subject',
    'scope',
    'key_set',
    'key_id',
    'created_at',
    'expires_at',
  ],
  jwk_keys: ['id', 'nid', 'sid', 'kid', 'keydata', 'created_at'],
  jwk_set_locks: ['nid', 'sid'],
  oauth2_clients: [
    'nid',
    'id',
    'client_name',
    'client_secret_hash',
    'redirect_uris',
    'grant_types',
    'response_types',
    'scope',
    'audience',
    'owner',
    'policy_uri',
    'tos_uri',
    'client_uri',
    'logo_uri',
    'contacts',
    'allowed_cors_origins',
    'subject_type',
    'sector_identifier_uri',
    'jwks',
    'jwks_uri',
    'token_endpoint_auth_method',
    'token_endpoint_auth_signing_alg',
    'request_uris',
    'request_object_signing_alg',
    'userinfo_signed_response_alg',
    'frontchannel_logout_uri',
    'frontchannel_logout_session_required',
    'backchannel_logout_uri',
    'backchannel_logout_session_required',
    'post_logout_redirect_uris',
    'metadata',
    'access_token_strategy',
    'skip_consent',
    'skip_logout_consent',
    'registration_access_token_signature',
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
    'created_at',
    'updated_at',
    'dynamic_registration',
    'require_pushed_authorization_requests',
    'dpop_bound_access_tokens',
    'tls_client_auth_subject_dn',
    'tls_client_auth_san_dns',
    'tls_client_auth_san_uri',
    'tls_client_auth_san_ip',
    'tls_client_auth_san_email',
    'tls_client_certificate_bound_access_tokens',
  ],
};
