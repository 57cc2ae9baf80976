-- gatehouse:no-transaction
-- gatehouse:required-by-code
-- (nid, client_id) on access tokens, refresh tokens and authorization codes: `DELETE
-- /admin/oauth2/tokens?client_id=` deletes a client's access tokens, and deleting a client deletes
-- its rows from all three tables (src/oauth2/store/token-families.ts); with these indexes those
-- deletes find the client's rows instead of scanning the tables. The (nid, subject, client_id)
-- indexes of sql/0052 and sql/0053 cannot serve a lookup by client alone. Built CONCURRENTLY, so
-- reads and writes go on during the build; hence outside a transaction and idempotent (IF NOT
-- EXISTS). If a build is interrupted PostgreSQL leaves an INVALID index of that name behind: drop it
-- (DROP INDEX CONCURRENTLY) and migrate again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_access_tokens_client_idx
  ON oauth2_access_tokens (nid, client_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_refresh_tokens_client_idx
  ON oauth2_refresh_tokens (nid, client_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_authorization_codes_client_idx
  ON oauth2_authorization_codes (nid, client_id);
