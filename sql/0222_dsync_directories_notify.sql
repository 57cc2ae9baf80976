-- gatehouse:required-by-code
-- Each process keeps the directories that SCIM requests name in memory while it LISTENs on
-- `gatehouse_changes` (see 0180); any change of `dsync_directories`, by any process or by hand,
-- tells them all to drop them. The event counter (`event_seq`), which every SCIM write moves, is
-- not a change of the directory: an update that changes nothing else does not notify.
CREATE FUNCTION gatehouse_notify_directory_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gatehouse_changes', 'directory');
  RETURN NULL;
END;
$$;

CREATE TRIGGER dsync_directories_notify_update
  AFTER UPDATE ON dsync_directories
  FOR EACH ROW
  WHEN ((to_jsonb(OLD) - 'event_seq') IS DISTINCT FROM (to_jsonb(NEW) - 'event_seq'))
  EXECUTE FUNCTION gatehouse_notify_directory_change();

CREATE TRIGGER dsync_directories_notify_change
  AFTER DELETE OR TRUNCATE ON dsync_directories
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_directory_change();
