-- CockroachDB variant of sql/0010_oauth2_clients.sql (the migrator uses it instead on CockroachDB; see
-- src/core/db/migrate.ts). Differs only in the collation of `id`.
-- OAuth 2.0 clients (Hydra's `hydra_client`): the registered relying parties. The secret is stored
-- only as a self-describing hash (pbkdf2 or bcrypt), the registration access token only as its HMAC
-- signature. Lifespans are milliseconds (NULL: the global TTL applies).
CREATE TABLE oauth2_clients (
  nid uuid NOT NULL REFERENCES networks(id),
  -- CockroachDB compares STRING byte-wise already (what "C" gives PostgreSQL): keyset pagination
  -- orders by id byte-wise without a collation.
  id text NOT NULL,
  client_name text NOT NULL DEFAULT '',
  client_secret_hash text,
  redirect_uris jsonb NOT NULL DEFAULT '[]',
  grant_types jsonb NOT NULL DEFAULT '[]',
  response_types jsonb NOT NULL DEFAULT '[]',
  scope text NOT NULL DEFAULT '',
  audience jsonb NOT NULL DEFAULT '[]',
  owner text NOT NULL DEFAULT '',
  policy_uri text NOT NULL DEFAULT '',
  tos_uri text NOT NULL DEFAULT '',
  client_uri text NOT NULL DEFAULT '',
  logo_uri text NOT NULL DEFAULT '',
  contacts jsonb NOT NULL DEFAULT '[]',
  allowed_cors_origins jsonb NOT NULL DEFAULT '[]',
  subject_type text NOT NULL DEFAULT 'public',
  sector_identifier_uri text NOT NULL DEFAULT '',
  jwks jsonb NOT NULL DEFAULT '{}',
  jwks_uri text NOT NULL DEFAULT '',
  token_endpoint_auth_method text NOT NULL DEFAULT 'client_secret_basic',
  token_endpoint_auth_signing_alg text NOT NULL DEFAULT '',
  request_uris jsonb NOT NULL DEFAULT '[]',
  request_object_signing_alg text NOT NULL DEFAULT '',
  userinfo_signed_response_alg text NOT NULL DEFAULT 'none',
  frontchannel_logout_uri text NOT NULL DEFAULT '',
  frontchannel_logout_session_required boolean NOT NULL DEFAULT false,
  backchannel_logout_uri text NOT NULL DEFAULT '',
  backchannel_logout_session_required boolean NOT NULL DEFAULT false,
  post_logout_redirect_uris jsonb NOT NULL DEFAULT '[]',
  metadata jsonb NOT NULL DEFAULT '{}',
  access_token_strategy text NOT NULL DEFAULT '',
  skip_consent boolean NOT NULL DEFAULT false,
  skip_logout_consent boolean,
  registration_access_token_signature text NOT NULL DEFAULT '',
  authorization_code_grant_access_token_lifespan bigint,
  authorization_code_grant_id_token_lifespan bigint,
  authorization_code_grant_refresh_token_lifespan bigint,
  client_credentials_grant_access_token_lifespan bigint,
  implicit_grant_access_token_lifespan bigint,
  implicit_grant_id_token_lifespan bigint,
  jwt_bearer_grant_access_token_lifespan bigint,
  refresh_token_grant_id_token_lifespan bigint,
  refresh_token_grant_access_token_lifespan bigint,
  refresh_token_grant_refresh_token_lifespan bigint,
  device_authorization_grant_id_token_lifespan bigint,
  device_authorization_grant_access_token_lifespan bigint,
  device_authorization_grant_refresh_token_lifespan bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (nid, id)
);

-- The list filters (`?owner=`, `?client_name=`) page by id within the filter.
CREATE INDEX oauth2_clients_owner_idx ON oauth2_clients (nid, owner, id);
CREATE INDEX oauth2_clients_name_idx ON oauth2_clients (nid, client_name, id);
