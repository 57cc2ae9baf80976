-- Consent sessions, stored as flow records (Hydra's `hydra_oauth2_flow`). Challenges and verifiers
-- are self-contained, so a row is written only when a consent verifier is consumed: the primary key
-- on the consent request id makes a second use of the same verifier fail.
--
-- `session_data` holds the consent's `session.access_token` / `session.id_token` claims, sealed with
-- AES-GCM when `oauth2.session.encrypt_at_rest` is on (plain JSON otherwise).
CREATE TABLE oauth2_flows (
  nid uuid NOT NULL REFERENCES networks(id),
  consent_request_id text NOT NULL,
  login_challenge_id text NOT NULL,
  client_id text NOT NULL,
  subject text NOT NULL,
  login_session_id text NOT NULL DEFAULT '',
  request_url text NOT NULL,
  requested_scope jsonb NOT NULL DEFAULT '[]',
  requested_audience jsonb NOT NULL DEFAULT '[]',
  requested_at timestamptz NOT NULL,
  authenticated_at timestamptz,
  oidc_context jsonb NOT NULL DEFAULT '{}',
  acr text NOT NULL DEFAULT '',
  amr jsonb NOT NULL DEFAULT '[]',
  context jsonb NOT NULL DEFAULT '{}',
  force_subject_identifier text NOT NULL DEFAULT '',
  consent_skip boolean NOT NULL DEFAULT false,
  granted_scope jsonb NOT NULL DEFAULT '[]',
  granted_audience jsonb NOT NULL DEFAULT '[]',
  remember boolean NOT NULL DEFAULT false,
  remember_for integer NOT NULL DEFAULT 0,
  handled_at timestamptz NOT NULL,
  -- requested_at + remember_for when remember_for > 0; NULL: never expires.
  expires_at timestamptz,
  session_data text NOT NULL,
  PRIMARY KEY (nid, consent_request_id)
);

-- Previous-consent lookup (newest remembered consent of a subject for a client), the consent
-- session list and revocation by subject / subject+client.
CREATE INDEX oauth2_flows_subject_client_idx ON oauth2_flows (nid, subject, client_id, requested_at DESC);
-- The clients that took part in a login session (front- and back-channel logout): one indexed query.
CREATE INDEX oauth2_flows_login_session_idx ON oauth2_flows (nid, login_session_id);

-- With `feature_flags.discard_skipped_consents`, a skipped consent leaves only its identifier here,
-- until its verifier could no longer be used anyway (requested_at + ttl.login_consent_request).
CREATE TABLE oauth2_used_consents (
  nid uuid NOT NULL REFERENCES networks(id),
  consent_request_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (nid, consent_request_id)
);

CREATE INDEX oauth2_used_consents_expires_idx ON oauth2_used_consents (expires_at);
