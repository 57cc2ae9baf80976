-- gatehouse:required-by-code
-- Each process keeps recently introspected access tokens in memory for a few seconds while it
-- LISTENs on `gatehouse_changes` (see 0180); deleting access tokens (revocation, reuse detection,
-- client or consent deletion, the janitor), by any process or by hand, tells them all to drop
-- them. Inserts do not notify (a token nobody has looked up is not cached), nor do statements
-- that deleted nothing. Access-token rows are never updated; an update notifies all the same.
CREATE FUNCTION gatehouse_notify_access_token_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- (The transition table exists only for DELETE and UPDATE: it is read only for them.)
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM pg_notify('gatehouse_changes', 'token');
  ELSIF EXISTS (SELECT 1 FROM changed) THEN
    PERFORM pg_notify('gatehouse_changes', 'token');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER oauth2_access_tokens_notify_delete
  AFTER DELETE ON oauth2_access_tokens
  REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_access_token_change();

CREATE TRIGGER oauth2_access_tokens_notify_update
  AFTER UPDATE ON oauth2_access_tokens
  REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_access_token_change();

CREATE TRIGGER oauth2_access_tokens_notify_truncate
  AFTER TRUNCATE ON oauth2_access_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_access_token_change();
