-- gatehouse:required-by-code
-- Webhook logs show queued deliveries too: with `log_webhook_events`, a real-time event's log row is
-- written when the event is queued (status `pending`, in the transaction of the change), and each
-- POST attempt updates that row (src/dsync/events/delivery.ts): status `delivered` or `failed`, the
-- response code, the error, the attempt number, when it ended and how long it took, and the exact
-- body sent. Batch mode still writes one row per POST of an array, after it.
-- - `event_id`: the event of a real-time log row (null for batch POSTs and for rows an embedder
--   logged through the library's `webhookLogs.log`); one row per event.
-- - `status`: `pending`, `delivered` or `failed`; null on rows of earlier releases, read as
--   `delivered`/`failed` from `delivered`.
-- - `status_code`, `completed_at`: null while pending. `duration_ms`: the last attempt's.
-- - `payload`: while pending the event as it is stored, then the exact body of the last attempt.
-- The outbox row remembers that its event was logged (`logged`), so that the attempts update the
-- log row even when the flag was turned off after the event was queued.
ALTER TABLE dsync_webhook_logs ADD COLUMN event_id uuid;
ALTER TABLE dsync_webhook_logs ADD COLUMN status text CHECK (status IN ('pending', 'delivered', 'failed'));
ALTER TABLE dsync_webhook_logs ADD COLUMN duration_ms integer;
ALTER TABLE dsync_webhook_logs ALTER COLUMN status_code DROP NOT NULL;
ALTER TABLE dsync_webhook_logs ALTER COLUMN completed_at DROP NOT NULL;
CREATE UNIQUE INDEX dsync_webhook_logs_event_idx ON dsync_webhook_logs (event_id);
ALTER TABLE dsync_webhook_outbox ADD COLUMN logged boolean NOT NULL DEFAULT false;

-- gatehouse_dsync_commit_events of sql/0240, with the pending log rows and the outbox's `logged`.
CREATE OR REPLACE FUNCTION gatehouse_dsync_commit_events(p_directory uuid, p_events json, p_commit json) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_n bigint := json_array_length(p_events);
  v_mode text := p_commit ->> 'outbox';
  v_before bigint;
  v_deactivated boolean;
  v_claimed boolean;
BEGIN
  IF v_n = 0 THEN
    RETURN 0;
  END IF;
  WITH s AS (
    UPDATE dsync_directories SET event_seq = event_seq + v_n WHERE id = p_directory
    RETURNING event_seq - v_n AS first_before, deactivated,
      (log_webhook_events AND v_mode = 'realtime') AS logged, webhook_endpoint
  ), ev AS (
    INSERT INTO dsync_events (id, directory_id, seq, event, payload, created_at)
    SELECT (t.e ->> 'id')::uuid, p_directory, s.first_before + t.ord, t.e ->> 'event', t.e -> 'payload',
      (p_commit ->> 'created_at')::timestamptz
    FROM s, json_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
    RETURNING id, seq, payload
  ), ob AS (
    INSERT INTO dsync_webhook_outbox (event_id, directory_id, seq, mode, job_id, logged)
    SELECT ev.id, p_directory, ev.seq, v_mode, null, s.logged FROM ev, s WHERE v_mode <> 'none'
  ), lg AS (
    INSERT INTO dsync_webhook_logs (id, directory_id, event_id, webhook_endpoint, payload, status, status_code,
      delivered, error, attempt, created_at, completed_at, duration_ms)
    SELECT gen_random_uuid(), p_directory, ev.id, s.webhook_endpoint, ev.payload, 'pending', null,
      false, null, 0, (p_commit ->> 'created_at')::timestamptz, null, null
    FROM ev, s WHERE s.logged
  )
  SELECT s.first_before, s.deactivated INTO v_before, v_deactivated FROM s;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'directory deleted' USING ERRCODE = 'GHD44';
  END IF;
  IF v_deactivated THEN
    RAISE EXCEPTION 'directory deactivated' USING ERRCODE = 'GHD09';
  END IF;
  IF v_mode = 'realtime' THEN
    -- A statement of its own, after the row lock above was granted. A sender row without
    -- failed_at is a sender on its way: it delivers this write's events, or steps down under the
    -- directory row lock only after it found none waiting (so after this write committed, it sees
    -- them). Only when there is none is the row written (claimed) and a job enqueued.
    IF NOT EXISTS (SELECT 1 FROM dsync_webhook_senders WHERE directory_id = p_directory AND failed_at IS NULL) THEN
      INSERT INTO dsync_webhook_senders (directory_id, sender_id)
        VALUES (p_directory, (p_commit ->> 'sender_id')::uuid)
      ON CONFLICT (directory_id) DO UPDATE
        SET sender_id = excluded.sender_id, job_id = null, failed_at = null, created_at = now()
        WHERE dsync_webhook_senders.failed_at IS NOT NULL
      RETURNING true INTO v_claimed;
      IF v_claimed THEN
        PERFORM gatehouse_submit_job(p_commit -> 'job');
      END IF;
    END IF;
  END IF;
  RETURN v_before;
END $$;
