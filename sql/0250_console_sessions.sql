-- gatehouse:required-by-code
-- Operator console sessions (src/console/sessions.ts): the console's sealed cookie carries a random
-- session id, and the session is valid only while its row exists and `expires_at` is ahead, so
-- sign-out and "sign out everywhere" end it on the server. `id_hash` is the SHA-256 digest of the
-- id (the id itself is never stored). Rows of a subject are found through `subject` (sign out
-- everywhere); expired rows, deleted at each sign-in, through `expires_at`.
CREATE TABLE console_sessions (
  id_hash text PRIMARY KEY,
  subject text NOT NULL,
  created_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_subject_idx ON console_sessions (subject);
CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);

-- gatehouse:down
DROP TABLE console_sessions;
