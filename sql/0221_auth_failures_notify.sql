-- gatehouse:required-by-code
-- Each process keeps the failed-authentication counts it read for the current window in memory
-- while it LISTENs on `gatehouse_changes` (see 0180); any write to `auth_failures`, by any process
-- or by hand, tells them all to read them again.
CREATE FUNCTION gatehouse_notify_auth_failure_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gatehouse_changes', 'auth_failure');
  RETURN NULL;
END;
$$;

CREATE TRIGGER auth_failures_notify_change
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_failures
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_auth_failure_change();
