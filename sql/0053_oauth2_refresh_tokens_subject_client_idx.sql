-- gatehouse:no-transaction
-- gatehouse:required-by-code
-- (nid, subject, client_id) on refresh tokens, for consent-session revocation; see
-- 0052 for why it is built CONCURRENTLY and what to do after an interrupted build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_refresh_tokens_subject_client_idx
  ON oauth2_refresh_tokens (nid, subject, client_id);
