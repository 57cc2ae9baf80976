-- gatehouse:required-by-code
-- Each process keeps the clients it authenticates in memory while it LISTENs on `gatehouse_changes`
-- (see 0180); any change of `oauth2_clients`, by any process or by hand, tells them all to drop them.
CREATE FUNCTION gatehouse_notify_client_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gatehouse_changes', 'client');
  RETURN NULL;
END;
$$;

CREATE TRIGGER oauth2_clients_notify_change
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON oauth2_clients
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_client_change();
