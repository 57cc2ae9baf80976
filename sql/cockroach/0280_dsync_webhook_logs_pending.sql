-- gatehouse:required-by-code
-- CockroachDB variant of sql/0280_dsync_webhook_logs_pending.sql: the same columns and index (one
-- statement each, as CockroachDB runs schema changes); it has no gatehouse_dsync_commit_events, and
-- src/dsync/store/events.ts writeEvents writes the pending log rows there.
ALTER TABLE dsync_webhook_logs ADD COLUMN event_id uuid;
ALTER TABLE dsync_webhook_logs ADD COLUMN status text CHECK (status IN ('pending', 'delivered', 'failed'));
ALTER TABLE dsync_webhook_logs ADD COLUMN duration_ms integer;
ALTER TABLE dsync_webhook_logs ALTER COLUMN status_code DROP NOT NULL;
ALTER TABLE dsync_webhook_logs ALTER COLUMN completed_at DROP NOT NULL;
CREATE UNIQUE INDEX dsync_webhook_logs_event_idx ON dsync_webhook_logs (event_id);
ALTER TABLE dsync_webhook_outbox ADD COLUMN logged boolean NOT NULL DEFAULT false;
