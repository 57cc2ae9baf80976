-- CockroachDB variant of sql/0020_jwk_keys.sql (the migrator uses it instead on CockroachDB; see
-- src/core/db/migrate.ts). `id` comes from a sequence: CockroachDB turns bigserial into
-- unique_rowid(), whose values exceed 2^53 and would lose precision as JavaScript numbers.
-- JSON Web Keys (Hydra's hydra_jwk). One row per key; `keydata` is the whole JWK (private members
-- included) sealed with AES-256-GCM under a key derived from secrets.system (purpose `jwk`), so the
-- database never holds a plaintext private key. `id` gives the insertion order: within a set the
-- highest id is the newest key, and the newest key with private material signs.
CREATE SEQUENCE jwk_keys_id_seq;

CREATE TABLE jwk_keys (
  id bigint PRIMARY KEY DEFAULT nextval('jwk_keys_id_seq'),
  nid uuid NOT NULL REFERENCES networks(id),
  sid varchar(255) NOT NULL,
  kid varchar(255) NOT NULL,
  keydata text NOT NULL,
  created_at timestamptz NOT NULL
);

-- (nid, sid, kid) is unique, as in Hydra (a duplicate kid in a set is a 409), and is what trusted
-- JWT-bearer issuers will reference.
CREATE UNIQUE INDEX jwk_keys_nid_sid_kid_uq ON jwk_keys (nid, sid, kid);
CREATE INDEX jwk_keys_nid_sid_id_idx ON jwk_keys (nid, sid, id);

-- One row per key set that was ever generated automatically. Its row lock serialises the "generate
-- the set if it is missing" step across every web process (a row lock rather than an advisory lock,
-- so the same code runs on CockroachDB). Rows are never deleted; they carry no key material.
CREATE TABLE jwk_set_locks (
  nid uuid NOT NULL REFERENCES networks(id),
  sid varchar(255) NOT NULL,
  PRIMARY KEY (nid, sid)
);
