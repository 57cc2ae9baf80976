-- Login sessions (Hydra's `hydra_oauth2_authentication_session`): one row per completed,
-- non-skipped login. `id` is the `sid` claim; a remembered session is found again through the
-- encrypted session cookie that holds it. Revocation by subject uses (nid, subject).
CREATE TABLE oauth2_login_sessions (
  nid uuid NOT NULL REFERENCES networks(id),
  id text NOT NULL,
  subject text NOT NULL,
  authenticated_at timestamptz NOT NULL,
  remember boolean NOT NULL DEFAULT false,
  expires_at timestamptz NOT NULL,
  identity_provider_session_id text NOT NULL DEFAULT '',
  PRIMARY KEY (nid, id)
);

CREATE INDEX oauth2_login_sessions_subject_idx ON oauth2_login_sessions (nid, subject);
