-- gatehouse_dsync_apply (sql/0270_dsync_apply.sql) stamps the `created_at` of a change's events
-- itself, once it holds the directory row that numbers them, and returns it beside `before` and
-- `items`. The caller used to stamp them before its call, so an event's `created_at` counted the
-- whole call (waiting for a pooled connection, the name and row locks, the reads and writes of the
-- change), and concurrent changes of one directory could be stamped against the order of their
-- sequence numbers. Stamped here, it is the time the events go in, on one clock (the database's)
-- for every process of a fleet, and it follows `seq` up to clock adjustments. It is cut to
-- milliseconds, the precision of the payloads (`created_at` of the webhook body and the events
-- API). A process of the release before still sends its own `created_at`: the function writes its
-- own instead, and that process hands its stamp to its caller until it is replaced.
-- Everything else is 0270's function unchanged.

CREATE OR REPLACE FUNCTION gatehouse_dsync_apply(p_change jsonb, p_payloads json) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_item jsonb;
  v_step jsonb;
  v_ev jsonb;
  v_text text;
  v_actual text[];
  v_stale boolean;
  v_results text[];
  v_kept int[];
  v_n int;
  v_e int := 0;
  v_keep boolean[] := '{}';
  v_ids text[] := '{}';
  v_types text[] := '{}';
  v_items json[] := '{}';
  v_events json;
  v_before bigint;
  v_created timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(k, 0)) FROM jsonb_array_elements_text(p_change -> 'locks') AS k;
  FOR v_item IN SELECT t.i FROM jsonb_array_elements(p_change -> 'items') WITH ORDINALITY AS t(i, n) ORDER BY t.n LOOP
    v_actual := '{}';
    v_stale := false;
    FOR v_step IN SELECT s.r FROM jsonb_array_elements(v_item -> 'reads') WITH ORDINALITY AS s(r, n) ORDER BY s.n LOOP
      EXECUTE v_step ->> 'sql' INTO v_text;
      v_text := coalesce(v_text, 'null');
      v_actual := v_actual || v_text;
      IF v_text IS DISTINCT FROM v_step ->> 'expect' THEN
        v_stale := true;
      END IF;
    END LOOP;
    IF v_stale THEN
      -- Its events are not kept (their payloads are skipped).
      FOR v_ev IN SELECT e.v FROM jsonb_array_elements(v_item -> 'events') AS e(v) LOOP
        v_e := v_e + 1;
        v_keep[v_e] := false;
      END LOOP;
      v_items := v_items || json_build_object('stale', to_json(v_actual));
      CONTINUE;
    END IF;
    v_results := '{}';
    FOR v_step IN SELECT s.w FROM jsonb_array_elements(v_item -> 'writes') WITH ORDINALITY AS s(w, n) ORDER BY s.n LOOP
      IF v_step ? 'plain' THEN
        EXECUTE v_step ->> 'sql';
        v_results := v_results || '[]'::text;
      ELSE
        EXECUTE v_step ->> 'sql' INTO v_text;
        v_results := v_results || coalesce(v_text, '[]');
      END IF;
    END LOOP;
    v_kept := '{}';
    FOR v_ev, v_n IN SELECT e.v, e.n FROM jsonb_array_elements(v_item -> 'events') WITH ORDINALITY AS e(v, n) ORDER BY e.n LOOP
      v_e := v_e + 1;
      v_keep[v_e] := NOT v_ev ? 'when' OR (
        CASE WHEN NOT v_ev -> 'when' ? 'key'
          THEN jsonb_array_length(v_results[(v_ev #>> '{when,write}')::int + 1]::jsonb) > 0
          ELSE v_results[(v_ev #>> '{when,write}')::int + 1]::jsonb ? (v_ev #>> '{when,key}')
        END);
      IF v_keep[v_e] THEN
        v_ids[v_e] := v_ev ->> 'id';
        v_types[v_e] := v_ev ->> 'event';
        v_kept := v_kept || (v_n - 1)::int;
      END IF;
    END LOOP;
    v_items := v_items || json_build_object('writes', to_json(v_results), 'events', to_json(v_kept));
  END LOOP;
  -- The kept events in order, each with its payload as sent (`json`: its text, key order kept).
  SELECT coalesce(json_agg(json_build_object('id', v_ids[p.n::int], 'event', v_types[p.n::int], 'payload', p.v)
      ORDER BY p.n), '[]')
    INTO v_events
    FROM json_array_elements(p_payloads) WITH ORDINALITY AS p(v, n) WHERE v_keep[p.n::int];
  -- Stamped here, once the directory row is locked (the lock gatehouse_dsync_commit_events takes
  -- next, for its sequence numbers, already held): see the head of this file.
  IF json_array_length(v_events) > 0 THEN
    PERFORM 1 FROM dsync_directories WHERE id = (p_change ->> 'directory')::uuid FOR NO KEY UPDATE;
  END IF;
  v_created := date_trunc('milliseconds', clock_timestamp());
  v_before := gatehouse_dsync_commit_events((p_change ->> 'directory')::uuid, v_events,
    jsonb_set(p_change -> 'commit', '{created_at}', to_jsonb(v_created))::json);
  RETURN json_build_object('before', v_before, 'created_at', v_created, 'items', array_to_json(v_items));
END $$;
