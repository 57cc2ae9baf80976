-- gatehouse:required-by-code
-- Every process keeps documents derived from the JSON Web Keys prepared in memory (jwks.json, the
-- discovery document, signing keys) and LISTENs on `gatehouse_changes`; any change of `jwk_keys`,
-- by any process or by hand, tells them all to rebuild. The payload names what changed.
CREATE FUNCTION gatehouse_notify_jwk_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gatehouse_changes', 'jwk');
  RETURN NULL;
END;
$$;

CREATE TRIGGER jwk_keys_notify_change
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON jwk_keys
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_jwk_change();
