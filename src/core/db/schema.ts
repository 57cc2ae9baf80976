/**
 * Typed tables for kysely: one interface per table created in sql/. Changes in the same commit as
 * the migration; test/http/core/schema.test.ts compares this file with information_schema.
 */
import type { ColumnType, Generated } from 'kysely';

export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
export type Json<T = unknown> = ColumnType<T, string, string>;

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
  used_times: Generated<number>;
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

export interface Database {
  networks: NetworksTable;
  oauth2_login_sessions: LoginSessionsTable;
  oauth2_flows: FlowsTable;
  oauth2_used_consents: UsedConsentsTable;
  oauth2_authorization_codes: AuthorizationCodesTable;
  oauth2_access_tokens: AccessTokensTable;
  oauth2_refresh_tokens: RefreshTokensTable;
  oauth2_jti_blacklist: JtiBlacklistTable;
  jwk_keys: JwkKeysTable;
  jwk_set_locks: JwkSetLocksTable;
}

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

/** Column lists per table, compared with information_schema in a test so this file cannot drift. */
export const TABLE_COLUMNS: Record<keyof Database, string[]> = {
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
  oauth2_authorization_codes: [...TOKEN_COLUMNS, 'redirect_uri', 'code_challenge', 'code_challenge_method', 'active'],
  oauth2_access_tokens: TOKEN_COLUMNS,
  oauth2_refresh_tokens: [...TOKEN_COLUMNS, 'access_token_signature', 'active', 'first_used_at', 'used_times'],
  oauth2_jti_blacklist: ['nid', 'signature', 'expires_at'],
  jwk_keys: ['id', 'nid', 'sid', 'kid', 'keydata', 'created_at'],
  jwk_set_locks: ['nid', 'sid'],
};
