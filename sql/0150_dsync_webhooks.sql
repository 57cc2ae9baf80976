-- Webhook delivery of directory-sync events.
--
-- dsync_webhook_outbox holds the events still to be delivered, one row per event, written in the
-- same transaction as the event (and so as the change). `mode` is how the event goes out:
-- 'realtime' rows are carried by a `webhook_deliver` graphile-worker job (`job_id`: the job
-- responsible for the row now; a job may hand its rows to the job of an earlier event of the same
-- directory, so that a directory's events go out in `seq` order); 'batch' rows wait for the batch
-- processor (`dsync_process_events`), which POSTs them as arrays. A delivered row is deleted and
-- its event gets `delivered_at`. Rows go with their event (and so with their directory).
ALTER TABLE dsync_events ADD COLUMN delivered_at timestamptz;

CREATE TABLE dsync_webhook_outbox (
  event_id uuid PRIMARY KEY REFERENCES dsync_events (id) ON DELETE CASCADE,
  directory_id uuid NOT NULL,
  seq bigint NOT NULL,
  mode text NOT NULL,
  job_id bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT dsync_webhook_outbox_mode_check CHECK (mode IN ('realtime', 'batch'))
);
CREATE INDEX dsync_webhook_outbox_directory_idx ON dsync_webhook_outbox (directory_id, mode, seq);
CREATE INDEX dsync_webhook_outbox_job_idx ON dsync_webhook_outbox (job_id);

-- Batch mode: a directory whose last batch failed waits until `next_attempt_at` (exponential
-- backoff); the row is removed by the next successful batch.
CREATE TABLE dsync_webhook_backoff (
  directory_id uuid PRIMARY KEY REFERENCES dsync_directories (id) ON DELETE CASCADE,
  attempts integer NOT NULL,
  next_attempt_at timestamptz NOT NULL,
  last_error text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per webhook POST attempt, when the directory has `log_webhook_events` (Jackson's
-- WebhookEventLog plus the error and the attempt). `payload` is the exact body sent: an event, or
-- an array of events in batch mode. Purged after `dsync.webhook_logs_ttl`.
CREATE TABLE dsync_webhook_logs (
  id uuid PRIMARY KEY,
  directory_id uuid NOT NULL REFERENCES dsync_directories (id) ON DELETE CASCADE,
  webhook_endpoint text NOT NULL,
  payload json NOT NULL,
  status_code integer NOT NULL,
  delivered boolean NOT NULL,
  error text,
  attempt integer NOT NULL,
  created_at timestamptz NOT NULL,
  completed_at timestamptz NOT NULL
);
CREATE INDEX dsync_webhook_logs_directory_idx ON dsync_webhook_logs (directory_id, created_at DESC, id DESC);
CREATE INDEX dsync_webhook_logs_created_idx ON dsync_webhook_logs (created_at);
