-- Login and consent verifiers are usable once: the first use records the flow's id here
-- (`login:<login challenge id>` or `consent:<consent request id>`), with the time the verifier
-- stops being valid anyway (requested_at + ttl.login_consent_request); the janitor deletes the row
-- after that. Unlike the consent session row, revoking a session or a consent does not delete it,
-- so a replayed verifier cannot bring either back.
CREATE TABLE oauth2_used_verifiers (
  nid uuid NOT NULL REFERENCES networks(id),
  id text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (nid, id)
);

CREATE INDEX oauth2_used_verifiers_expires_idx ON oauth2_used_verifiers (nid, expires_at);
