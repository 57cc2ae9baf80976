-- Device authorization grant (RFC 8628). One row per `POST /oauth2/device/auth`, keyed by the HMAC
-- signature of the device code (`ory_dc_`); the user code is stored only as its HMAC signature
-- (unique while the row exists). `state`: pending → accepted (login and consent done) → issued
-- (tokens handed out once), or rejected. `last_polled_at` drives `slow_down`. `session_data` is the
-- sealed grant session once accepted. `request_id` is the grant family of the issued tokens.
-- oauth2_device_challenge_attempts counts wrong user codes per device challenge (guessing limit).
CREATE TABLE oauth2_device_requests (
  nid uuid NOT NULL REFERENCES networks(id),
  signature text NOT NULL,
  user_code_signature text NOT NULL,
  request_id text NOT NULL,
  client_id text NOT NULL,
  subject text NOT NULL DEFAULT '',
  requested_scope jsonb NOT NULL DEFAULT '[]',
  granted_scope jsonb NOT NULL DEFAULT '[]',
  requested_audience jsonb NOT NULL DEFAULT '[]',
  granted_audience jsonb NOT NULL DEFAULT '[]',
  requested_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  state text NOT NULL DEFAULT 'pending',
  last_polled_at timestamptz,
  session_data text NOT NULL DEFAULT '',
  PRIMARY KEY (nid, signature)
);
CREATE UNIQUE INDEX oauth2_device_requests_user_code_idx ON oauth2_device_requests (nid, user_code_signature);
CREATE INDEX oauth2_device_requests_expires_idx ON oauth2_device_requests (nid, expires_at);

CREATE TABLE oauth2_device_challenge_attempts (
  nid uuid NOT NULL REFERENCES networks(id),
  challenge_id text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (nid, challenge_id)
);
CREATE INDEX oauth2_device_challenge_attempts_expires_idx ON oauth2_device_challenge_attempts (nid, expires_at);
