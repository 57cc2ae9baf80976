-- Trust relationships of the RFC 7523 JWT bearer grant (Hydra's
-- `hydra_oauth2_trusted_jwt_bearer_issuer`, admin API /admin/trust/grants/jwt-bearer/issuers).
-- The issuer's public key lives in `jwk_keys`, in the key set named after the issuer (`key_set` =
-- issuer, `key_id` = the JWK's kid); deleting that key (or its set) removes the trust relationship.
-- `subject` is '' when `allow_any_subject` is set; (issuer, subject, key_id) is unique per network.
CREATE TABLE oauth2_trusted_jwt_bearer_issuers (
  id uuid PRIMARY KEY,
  nid uuid NOT NULL REFERENCES networks(id),
  issuer text NOT NULL,
  subject text NOT NULL DEFAULT '',
  allow_any_subject boolean NOT NULL DEFAULT false,
  scope jsonb NOT NULL DEFAULT '[]',
  key_set varchar(255) NOT NULL,
  key_id varchar(255) NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  FOREIGN KEY (nid, key_set, key_id) REFERENCES jwk_keys (nid, sid, kid) ON DELETE CASCADE
);
CREATE UNIQUE INDEX oauth2_trusted_jwt_bearer_issuers_uq ON oauth2_trusted_jwt_bearer_issuers (nid, issuer, subject, key_id);
-- Listing in id order per network, and the janitor's expiry sweep.
CREATE INDEX oauth2_trusted_jwt_bearer_issuers_nid_id_idx ON oauth2_trusted_jwt_bearer_issuers (nid, id);
CREATE INDEX oauth2_trusted_jwt_bearer_issuers_expires_idx ON oauth2_trusted_jwt_bearer_issuers (expires_at);
