-- CockroachDB variant of sql/0190_audit_events.sql (the migrator uses it instead on CockroachDB;
-- see src/core/db/migrate.ts). `id` comes from a sequence (CockroachDB turns bigserial into
-- unique_rowid(), whose values exceed 2^53 and would lose precision as JavaScript numbers), and
-- there is no append-only trigger: CockroachDB before v24.3 has no triggers, and none has
-- statement-level or TRUNCATE triggers. On CockroachDB the table is append-only by the code only;
-- revoke UPDATE and DELETE on it from the service's role to have the database refuse them
-- (docs/scaling.md, CockroachDB).
-- Audit events: an append-only record of who did what (see docs/observability.md). Rows are written
-- in the same transaction as the change they describe, so a rolled-back change leaves none.
CREATE SEQUENCE audit_events_id_seq;

CREATE TABLE audit_events (
  id bigint PRIMARY KEY DEFAULT nextval('audit_events_id_seq'),
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
