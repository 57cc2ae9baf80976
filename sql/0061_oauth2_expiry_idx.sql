-- gatehouse:no-transaction
-- The janitor deletes expired rows in bounded batches (src/oauth2/store/janitor.ts); each batch
-- finds its rows through one of these instead of scanning the table. Rows that never expire
-- (NULL expires_at) are left out of the partial indexes. oauth2_jti_blacklist and
-- oauth2_used_consents already have an expires_at index (sql/0041, sql/0042).
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_access_tokens_expires_idx
  ON oauth2_access_tokens (nid, expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_refresh_tokens_expires_idx
  ON oauth2_refresh_tokens (nid, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_authorization_codes_expires_idx
  ON oauth2_authorization_codes (nid, expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_login_sessions_expires_idx
  ON oauth2_login_sessions (nid, expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_flows_expires_idx
  ON oauth2_flows (nid, expires_at) WHERE expires_at IS NOT NULL;
