-- Audit events: an append-only record of who did what (see docs/observability.md). Rows are written
-- in the same transaction as the change they describe, so a rolled-back change leaves none. Updates
-- are refused; deletes only by the retention purge, which sets `gatehouse.audit_purge` for its own
-- transaction.
CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  time timestamptz NOT NULL DEFAULT now(),
  type text NOT NULL,
  actor_kind text NOT NULL,
  actor_id text NOT NULL DEFAULT '',
  target_kind text NOT NULL,
  target_id text NOT NULL DEFAULT '',
  outcome text NOT NULL,
  request_id text NOT NULL DEFAULT '',
  trace_id text NOT NULL DEFAULT '',
  details jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX audit_events_time_idx ON audit_events (time, id);
CREATE INDEX audit_events_type_idx ON audit_events (type, time, id);
CREATE INDEX audit_events_target_idx ON audit_events (target_id, time, id);
CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, time, id);

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('gatehouse.audit_purge', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
