-- gatehouse:no-transaction
-- gatehouse:required-by-code
-- (nid, subject, client_id) on access tokens: consent-session revocation deletes a
-- subject's tokens (optionally for one client) with this index instead of a table scan. Built
-- CONCURRENTLY so that reads and writes of a large table go on while it is built; it therefore runs
-- outside a transaction and is idempotent (IF NOT EXISTS). If a build is interrupted PostgreSQL
-- leaves an INVALID index of this name behind: drop it (DROP INDEX CONCURRENTLY) and migrate again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_access_tokens_subject_client_idx
  ON oauth2_access_tokens (nid, subject, client_id);
