-- gatehouse:required-by-code
-- gatehouse_dsync_apply (sql/0270_dsync_apply.sql, sql/0350_dsync_apply_created_at.sql) made
-- cheaper per call, for the same plans: a members PATCH cost PostgreSQL 12% more CPU than the
-- dedicated function before 0270 did. Measured by instruction count (valgrind) of one backend
-- running a PATCH's call again and again, most of that went to planning every statement anew
-- (EXECUTE with the values written in: https://www.postgresql.org/docs/current/plpgsql-statements.html#PLPGSQL-STATEMENTS-EXECUTING-DYN),
-- and to parsing the same `json` texts several times over (the events and `commit` handed to
-- gatehouse_dsync_commit_events as `json`, each `->>` of which parses the text again).
--
-- What changes, the rest being 0350's function:
-- - A statement may come with arguments: `{sql, args}`, its text with `$1`, `$2`… and casts that
--   give their types, `args` its values as text (or null). Such a statement is prepared once per
--   session (`PREPARE`, named after the md5 of its text; https://www.postgresql.org/docs/current/sql-prepare.html)
--   and run with `EXECUTE name(args)`, so that its plan is kept and reused. Only statements whose
--   plan cannot depend on the size of a directory are sent so (src/dsync/store/steps.ts): the
--   version checks of rows read before (by `ctid`, a TID scan whatever the statistics say) and
--   inserts. The others keep their values as literals and are planned at every call, as before
--   (see sql/0260_dsync_write_functions_plans.sql for why). Prepared statements are session state:
--   each call looks which are there (pg_prepared_statements) before it prepares what it lacks, so
--   a session where they were deallocated (DISCARD ALL) prepares them again; a pooler in
--   transaction mode hands the call one server session from its start to its end.
-- - The function runs with plan_cache_mode = force_generic_plan
--   (https://www.postgresql.org/docs/current/runtime-config-query.html#GUC-PLAN-CACHE-MODE): a
--   prepared statement would otherwise be planned anew for its first five runs in each session, and
--   for good when the plan for the values costs less than the generic one (a version check of
--   several users: the number of ids is known only with the values). The setting is the
--   function's own and ends with the call. Statements run through EXECUTE with their values are
--   one-shot plans, which the setting does not touch.
-- - A read may name the read to run instead when it does not give what is expected (`else`): a
--   version check names the read of the whole row, so that a row changed behind the plan's back
--   comes back with what is needed to plan again, in the same call.
-- - The events are written here, from arrays (ids, types, payloads split once from `p_payloads`),
--   with `commit` read as `jsonb`: what gatehouse_dsync_commit_events did (0240, with 0280's log
--   rows: the sequence numbers under the directory row lock, the events, their outbox rows and
--   pending log rows, the sender check and its job), whose only caller this was: it is dropped.
--   The events are stamped once the directory row is held, as 0350 does.
-- Callers of the release before send no `args` and no `else`, and get what 0350 gave them.
-- CockroachDB has no such function (sql/cockroach/0360_dsync_apply_prepared.sql): it runs the
-- same statements one by one, those with arguments as parameterized statements.

-- The statement to EXECUTE for a step: its text, or for one with arguments the EXECUTE of its
-- prepared statement with their values as literals.
CREATE OR REPLACE FUNCTION gatehouse_dsync_executable(p_step jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF NOT p_step ? 'args' THEN
    RETURN p_step ->> 'sql';
  END IF;
  RETURN format('EXECUTE %I(%s)', 'gatehouse_dsync_' || md5(p_step ->> 'sql'),
    (SELECT string_agg(quote_nullable(a.v), ', ' ORDER BY a.n)
      FROM jsonb_array_elements_text(p_step -> 'args') WITH ORDINALITY AS a(v, n)));
END $$;

-- Prepares the step's statement when it has arguments and this session has not prepared it yet.
-- `p_prepared`: the names of the session's prepared statements (read from pg_prepared_statements
-- when null, once per call); returns them with the step's.
CREATE OR REPLACE FUNCTION gatehouse_dsync_prepare(p_step jsonb, p_prepared text[]) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  v_name text;
BEGIN
  IF NOT p_step ? 'args' THEN
    RETURN p_prepared;
  END IF;
  v_name := 'gatehouse_dsync_' || md5(p_step ->> 'sql');
  IF p_prepared IS NULL THEN
    p_prepared := ARRAY(SELECT p.name FROM pg_prepared_statements AS p);
  END IF;
  IF NOT v_name = ANY (p_prepared) THEN
    EXECUTE format('PREPARE %I AS %s', v_name, p_step ->> 'sql');
    p_prepared := p_prepared || v_name;
  END IF;
  RETURN p_prepared;
END $$;

CREATE OR REPLACE FUNCTION gatehouse_dsync_apply(p_change jsonb, p_payloads json) RETURNS json
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_item jsonb;
  v_step jsonb;
  v_run jsonb;
  v_ev jsonb;
  v_text text;
  v_prepared text[];
  v_actual text[];
  v_stale boolean;
  v_results text[];
  v_kept int[];
  v_e int := 0;
  v_keep boolean[] := '{}';
  v_ids uuid[] := '{}';
  v_types text[] := '{}';
  v_payloads json[];
  v_items json[] := '{}';
  v_directory uuid := (p_change ->> 'directory')::uuid;
  v_commit jsonb := p_change -> 'commit';
  v_mode text := p_change #>> '{commit,outbox}';
  v_count int;
  v_before bigint := 0;
  v_deactivated boolean;
  v_logged boolean;
  v_endpoint text;
  v_claimed boolean;
  v_created timestamptz;
BEGIN
  IF jsonb_array_length(p_change -> 'locks') > 0 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(k, 0)) FROM jsonb_array_elements_text(p_change -> 'locks') AS k;
  END IF;
  -- The arrays are walked by index (an expression each, no query).
  FOR i IN 0 .. jsonb_array_length(p_change -> 'items') - 1 LOOP
    v_item := p_change -> 'items' -> i;
    v_actual := '{}';
    v_stale := false;
    FOR j IN 0 .. coalesce(jsonb_array_length(v_item -> 'reads'), 0) - 1 LOOP
      v_step := v_item -> 'reads' -> j;
      -- The read, then (when it does not give what is expected) the read it names instead.
      v_run := v_step;
      LOOP
        v_prepared := gatehouse_dsync_prepare(v_run, v_prepared);
        EXECUTE gatehouse_dsync_executable(v_run) INTO v_text;
        v_text := coalesce(v_text, 'null');
        EXIT WHEN v_text = v_step ->> 'expect' OR NOT v_run ? 'else';
        v_run := v_run -> 'else';
      END LOOP;
      v_actual := v_actual || v_text;
      IF v_text IS DISTINCT FROM v_step ->> 'expect' THEN
        v_stale := true;
      END IF;
    END LOOP;
    IF v_stale THEN
      -- Its events are not kept (their payloads are skipped).
      v_e := v_e + coalesce(jsonb_array_length(v_item -> 'events'), 0);
      v_items := v_items || json_build_object('stale', to_json(v_actual));
      CONTINUE;
    END IF;
    v_results := '{}';
    FOR j IN 0 .. coalesce(jsonb_array_length(v_item -> 'writes'), 0) - 1 LOOP
      v_step := v_item -> 'writes' -> j;
      v_prepared := gatehouse_dsync_prepare(v_step, v_prepared);
      IF v_step ? 'plain' THEN
        EXECUTE gatehouse_dsync_executable(v_step);
        v_results := v_results || '[]'::text;
      ELSE
        EXECUTE gatehouse_dsync_executable(v_step) INTO v_text;
        v_results := v_results || coalesce(v_text, '[]');
      END IF;
    END LOOP;
    v_kept := '{}';
    FOR j IN 0 .. coalesce(jsonb_array_length(v_item -> 'events'), 0) - 1 LOOP
      v_ev := v_item -> 'events' -> j;
      v_e := v_e + 1;
      v_keep[v_e] := NOT v_ev ? 'when' OR (
        CASE WHEN NOT v_ev -> 'when' ? 'key'
          THEN jsonb_array_length(v_results[(v_ev #>> '{when,write}')::int + 1]::jsonb) > 0
          ELSE v_results[(v_ev #>> '{when,write}')::int + 1]::jsonb ? (v_ev #>> '{when,key}')
        END);
      IF v_keep[v_e] THEN
        v_ids := v_ids || (v_ev ->> 'id')::uuid;
        v_types := v_types || (v_ev ->> 'event');
        v_kept := v_kept || j;
      END IF;
    END LOOP;
    v_items := v_items || json_build_object('writes', to_json(v_results), 'events', to_json(v_kept));
  END LOOP;
  v_count := cardinality(v_ids);
  IF v_count > 0 THEN
    -- The kept events' payloads, in order, each as sent (`json`: its text, key order kept).
    SELECT array_agg(p.v ORDER BY p.n) INTO v_payloads
      FROM json_array_elements(p_payloads) WITH ORDINALITY AS p(v, n) WHERE v_keep[p.n::int];
    -- The directory's next sequence numbers; the update locks its row until the commit.
    UPDATE dsync_directories SET event_seq = event_seq + v_count WHERE id = v_directory
      RETURNING event_seq - v_count, deactivated, log_webhook_events AND v_mode = 'realtime', webhook_endpoint
      INTO v_before, v_deactivated, v_logged, v_endpoint;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'directory deleted' USING ERRCODE = 'GHD44';
    END IF;
    IF v_deactivated THEN
      RAISE EXCEPTION 'directory deactivated' USING ERRCODE = 'GHD09';
    END IF;
    -- Stamped once the directory row is held (see 0350).
    v_created := date_trunc('milliseconds', clock_timestamp());
    -- The events, their outbox rows and, with log_webhook_events, their pending log rows (0280).
    WITH ev AS (
      INSERT INTO dsync_events (id, directory_id, seq, event, payload, created_at)
      SELECT e.id, v_directory, v_before + e.ord, e.event, e.payload, v_created
        FROM unnest(v_ids, v_types, v_payloads) WITH ORDINALITY AS e(id, event, payload, ord)
      RETURNING id, seq, payload
    ), ob AS (
      INSERT INTO dsync_webhook_outbox (event_id, directory_id, seq, mode, job_id, logged)
      SELECT ev.id, v_directory, ev.seq, v_mode, null, v_logged FROM ev WHERE v_mode <> 'none'
    )
    INSERT INTO dsync_webhook_logs (id, directory_id, event_id, webhook_endpoint, payload, status, status_code,
      delivered, error, attempt, created_at, completed_at, duration_ms)
    SELECT gen_random_uuid(), v_directory, ev.id, v_endpoint, ev.payload, 'pending', null,
      false, null, 0, v_created, null, null
    FROM ev WHERE v_logged;
    IF v_mode = 'realtime' THEN
      -- A statement of its own, after the row lock above was granted. A sender row without
      -- failed_at is a sender on its way: it delivers this write's events, or steps down under the
      -- directory row lock only after it found none waiting (so after this write committed, it sees
      -- them). Only when there is none is the row written (claimed) and a job enqueued.
      IF NOT EXISTS (SELECT 1 FROM dsync_webhook_senders WHERE directory_id = v_directory AND failed_at IS NULL) THEN
        INSERT INTO dsync_webhook_senders (directory_id, sender_id)
          VALUES (v_directory, (v_commit ->> 'sender_id')::uuid)
        ON CONFLICT (directory_id) DO UPDATE
          SET sender_id = excluded.sender_id, job_id = null, failed_at = null, created_at = now()
          WHERE dsync_webhook_senders.failed_at IS NOT NULL
        RETURNING true INTO v_claimed;
        IF v_claimed THEN
          PERFORM gatehouse_submit_job((v_commit -> 'job')::json);
        END IF;
      END IF;
    END IF;
  ELSE
    v_created := date_trunc('milliseconds', clock_timestamp());
  END IF;
  RETURN json_build_object('before', v_before, 'created_at', v_created, 'items', array_to_json(v_items));
END $$;

-- Called by gatehouse_dsync_apply only, which now writes the events itself.
DROP FUNCTION gatehouse_dsync_commit_events(uuid, json, json);
