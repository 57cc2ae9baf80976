-- gatehouse:required-by-code
-- Real-time webhook delivery: one sender job per directory at a time. A change that queues events
-- (in dsync_webhook_outbox, job_id left null) makes sure, in its transaction and under the
-- directory's row lock, that the directory has a live sender (`job_id`, a `webhook_deliver` job in
-- the queue `dsync:<directory id>`); the sender POSTs the directory's queued events in `seq` order
-- until none is left, then removes its row under the same lock, so that an event committed after
-- its last look starts a new sender and no event waits without one.
CREATE TABLE dsync_webhook_senders (
  directory_id uuid PRIMARY KEY REFERENCES dsync_directories (id) ON DELETE CASCADE,
  job_id bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
