-- gatehouse:no-transaction
-- Revocation of a subject's login sessions deletes them in batches in `id` order, each batch
-- starting after the last id of the one before (src/oauth2/store/sessions.ts): with `id` in the
-- index a batch is a range scan that begins where the previous one ended, instead of a scan that
-- walks again over every row the earlier batches deleted (which made the work grow with the square
-- of the number of sessions). It has the key columns of oauth2_login_sessions_subject_idx (sql/0040),
-- which it replaces.
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_login_sessions_subject_id_idx
  ON oauth2_login_sessions (nid, subject, id);
DROP INDEX CONCURRENTLY IF EXISTS oauth2_login_sessions_subject_idx;
