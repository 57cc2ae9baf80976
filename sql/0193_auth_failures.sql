-- Failed authentications per credential (OAuth 2.0 client id, SCIM directory) and per source
-- address, counted in fixed windows so that the limit holds across processes. Keys are SHA-256
-- digests (no client id or address is stored in the clear). Only failures write here; a request
-- reads one or two rows by primary key. Old windows are deleted as new failures are counted.
CREATE TABLE auth_failures (
  key text NOT NULL,
  window_start timestamptz NOT NULL,
  failures integer NOT NULL,
  PRIMARY KEY (key, window_start)
);
CREATE INDEX auth_failures_window_idx ON auth_failures (window_start);
