-- Authorization codes, access tokens and refresh tokens. Each row is keyed by the HMAC signature of
-- the opaque token (`ory_ac_` / `ory_at_` / `ory_rt_`; for JWT access tokens the JWS signature
-- segment): the token itself is never stored. `request_id` is the grant family (the consent request
-- id for the authorization-code flow); revocation of a grant deletes by it.
-- `session_data` is the grant session (ID token claims, access token extra claims), sealed with
-- AES-GCM when `oauth2.session.encrypt_at_rest` is on.
-- The (nid, subject, client_id) indexes are added separately, concurrently.
CREATE TABLE oauth2_authorization_codes (
  nid uuid NOT NULL REFERENCES networks(id),
  signature text NOT NULL,
  request_id text NOT NULL,
  client_id text NOT NULL,
  subject text NOT NULL,
  requested_scope jsonb NOT NULL DEFAULT '[]',
  granted_scope jsonb NOT NULL DEFAULT '[]',
  requested_audience jsonb NOT NULL DEFAULT '[]',
  granted_audience jsonb NOT NULL DEFAULT '[]',
  redirect_uri text NOT NULL DEFAULT '',
  code_challenge text NOT NULL DEFAULT '',
  code_challenge_method text NOT NULL DEFAULT '',
  requested_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  active boolean NOT NULL DEFAULT true,
  session_data text NOT NULL,
  PRIMARY KEY (nid, signature)
);
CREATE INDEX oauth2_authorization_codes_request_idx ON oauth2_authorization_codes (nid, request_id);

CREATE TABLE oauth2_access_tokens (
  nid uuid NOT NULL REFERENCES networks(id),
  signature text NOT NULL,
  request_id text NOT NULL,
  client_id text NOT NULL,
  subject text NOT NULL,
  requested_scope jsonb NOT NULL DEFAULT '[]',
  granted_scope jsonb NOT NULL DEFAULT '[]',
  requested_audience jsonb NOT NULL DEFAULT '[]',
  granted_audience jsonb NOT NULL DEFAULT '[]',
  requested_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  session_data text NOT NULL,
  PRIMARY KEY (nid, signature)
);
CREATE INDEX oauth2_access_tokens_request_idx ON oauth2_access_tokens (nid, request_id);

CREATE TABLE oauth2_refresh_tokens (
  nid uuid NOT NULL REFERENCES networks(id),
  signature text NOT NULL,
  request_id text NOT NULL,
  client_id text NOT NULL,
  subject text NOT NULL,
  requested_scope jsonb NOT NULL DEFAULT '[]',
  granted_scope jsonb NOT NULL DEFAULT '[]',
  requested_audience jsonb NOT NULL DEFAULT '[]',
  granted_audience jsonb NOT NULL DEFAULT '[]',
  requested_at timestamptz NOT NULL,
  -- NULL: never expires (`ttl.refresh_token: -1`).
  expires_at timestamptz,
  session_data text NOT NULL,
  -- The access token issued together with this refresh token (graceful rotation revokes only it).
  access_token_signature text NOT NULL DEFAULT '',
  active boolean NOT NULL DEFAULT true,
  first_used_at timestamptz,
  used_times integer NOT NULL DEFAULT 0,
  PRIMARY KEY (nid, signature)
);
CREATE INDEX oauth2_refresh_tokens_request_idx ON oauth2_refresh_tokens (nid, request_id);

-- `jti` values of client assertions (private_key_jwt) and jwt-bearer grants, kept until the
-- assertion expires so that each can be used once. `signature` is the SHA-256 of the jti.
CREATE TABLE oauth2_jti_blacklist (
  nid uuid NOT NULL REFERENCES networks(id),
  signature text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (nid, signature)
);
CREATE INDEX oauth2_jti_blacklist_expires_idx ON oauth2_jti_blacklist (expires_at);
