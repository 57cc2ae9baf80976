-- gatehouse:required-by-code
-- The job outbox (used when `queue.dsn` names a database other than `dsn`): a data transaction
-- writes its jobs here, and the relay of one worker process moves them into graphile-worker on the
-- queue database in `id` order, exactly once (see src/core/jobs/relay.ts). Empty when the queue
-- lives in the data database: jobs are then added by the transaction itself.
CREATE TABLE gatehouse_job_outbox (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  op text NOT NULL,
  task text NOT NULL,
  payload jsonb NOT NULL,
  spec jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A directory's real-time sender is named by `sender_id` (its job's key is
-- `dsync:sender:<sender_id>`), not by a graphile-worker job id, so that a data transaction never
-- needs to read graphile-worker's tables: `failed_at` is set when the sender ran out of attempts
-- (the directory's next event starts a new one). Rows of earlier releases keep `job_id` and a null
-- `sender_id`.
ALTER TABLE dsync_webhook_senders
  ADD COLUMN sender_id uuid,
  ADD COLUMN failed_at timestamptz,
  ALTER COLUMN job_id DROP NOT NULL;
