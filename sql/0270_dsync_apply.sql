-- gatehouse:required-by-code
-- One generic function applies every planned directory change on PostgreSQL
-- (src/dsync/change/apply.ts), and the write-specific functions of 0240 go: the change is planned in
-- TypeScript (its name locks, the rows it reads and expects, the statements that write, and its
-- events, whose payloads are built by src/dsync/events/payload.ts only), and this function runs the
-- plan without knowing the shape of a row or an event.
--
-- `p_change`: {directory, locks (sorted lock names), items: [{reads, writes, events}], commit};
-- `p_payloads`: the payload of each event of `p_change`, in order (`json`, so that their text is
-- stored as it was sent, key order kept; the rest is `jsonb`, read many times).
-- Each item is one change; several changes of one directory may share a call (one transaction,
-- one directory row lock, one commit), in order. For each item, in order:
-- - `reads`: [{sql, expect}]. Each read is one statement that returns one json value as text, its
--   values written into it as literals; it runs through EXECUTE, so it is planned for this call,
--   with the values and the table as they are (see the head of 0260), and as a statement of its own it
--   takes a fresh snapshot at READ COMMITTED, after the name locks were granted and after the
--   statements before it (https://www.postgresql.org/docs/current/transaction-iso.html#XACT-READ-COMMITTED).
--   A read whose text differs from `expect` (or that has no `expect`) makes the item stale: none of
--   its writes run, and the texts read are returned so that the caller can plan it again on them.
-- - `writes`: [{sql, plain}], run the same way when every read held; each returns a json array
--   of keys as text (the ids it inserted, updated or deleted), or nothing when `plain` (no event
--   depends on its keys: they read as []).
-- - `events`: [{id, event, when}] in order; an event with `when` {write, key} is kept only
--   when that write (its index in `writes`) returned `key`, or returned any key when `key` is absent.
-- Then the kept events of every item are committed as one write's events
-- (gatehouse_dsync_commit_events of 0240: sequence numbers under the directory row lock, the events
-- and their outbox rows, the sender check). Returns {before, items: [{stale: [texts]} or
-- {writes: [[keys]], events: [indexes kept]}]}; the event ids and payloads the caller sent are what
-- is stored.
-- gatehouse_submit_job and gatehouse_dsync_commit_events of 0240 stay: they know no payload.
-- Processes of the release before call the functions dropped here for SCIM creates and members-only
-- group PATCHes: until they are replaced, those requests fail there (500); the other writes of that
-- release keep working.
-- CockroachDB applies the same plan statement by statement (sql/cockroach/0270_dsync_apply.sql).

CREATE FUNCTION gatehouse_dsync_apply(p_change jsonb, p_payloads json) RETURNS json
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
  v_before := gatehouse_dsync_commit_events((p_change ->> 'directory')::uuid, v_events, (p_change -> 'commit')::json);
  RETURN json_build_object('before', v_before, 'items', array_to_json(v_items));
END $$;

DROP FUNCTION gatehouse_dsync_patch_members(uuid, text, text, text, text, json, json);
DROP FUNCTION gatehouse_dsync_create_users(uuid, text, text, text, text[], json, json);
DROP FUNCTION gatehouse_dsync_member_data(text, boolean, text, text, text, boolean, json, json, json);
DROP FUNCTION gatehouse_dsync_event(text, text, text, text, json);
