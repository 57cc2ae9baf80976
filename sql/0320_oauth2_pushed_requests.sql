-- Pushed authorization requests (RFC 9126): `POST /oauth2/par` stores the authorization request of
-- an authenticated client here and answers a `request_uri`
-- (`urn:ietf:params:oauth:request_uri:<B>.<S>`, an HMAC-signed handle like the opaque tokens; only
-- S is stored). `params` is the request as validated (sealed like session data when
-- `oauth2.session.encrypt_at_rest`). The first `/oauth2/auth` that presents the handle starts the
-- flow and sets `used_at`; from then on it is read only by the same flow coming back with its login
-- or consent verifier, until `expires_at` (moved to the end of the flow's lifespan by that first
-- use). The janitor's `requests` target deletes expired rows.
CREATE TABLE oauth2_pushed_requests (
  nid uuid NOT NULL REFERENCES networks(id),
  signature text NOT NULL,
  client_id text NOT NULL,
  params text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  PRIMARY KEY (nid, signature)
);

CREATE INDEX oauth2_pushed_requests_expires_idx ON oauth2_pushed_requests (nid, expires_at);

-- RFC 9126 §6: a client registered with `require_pushed_authorization_requests` may start an
-- authorization only with a pushed request.
ALTER TABLE oauth2_clients ADD COLUMN require_pushed_authorization_requests boolean NOT NULL DEFAULT false;
