-- gatehouse:required-by-code
-- SCIM writes as one server-side call each (PostgreSQL; CockroachDB keeps the statement-by-statement
-- path, see sql/cockroach/0240_dsync_write_functions.sql). A `POST /Users` and a members-only group
-- `PATCH` (src/dsync/scim/one-call.ts) call one function, outside an explicit transaction: the
-- call is its own transaction, so the whole write costs one round trip instead of eight or seven.
-- The functions do what src/dsync/scim/{users,groups}.ts and src/dsync/events/service.ts do for the
-- other writes, in the same order and with the same locks (creates of one directory that arrive
-- together share one call). Each statement of a PL/pgSQL function
-- running at READ COMMITTED takes a fresh snapshot
-- (https://www.postgresql.org/docs/current/transaction-iso.html#XACT-READ-COMMITTED), so the
-- snapshot rules of the statement path hold here statement by statement:
-- - the name check is a statement after the one that takes the name locks: it sees a create of the
--   same name that committed while this call waited for the lock;
-- - the sender check is a statement after the one that locks the directory row (the events
--   statement): it sees a sender that stepped down (releaseSender, under the same row lock) while
--   this call waited.
-- Event payloads built here follow src/dsync/events/payload.ts key for key (`json`, key order kept).

-- Submits one `add` job in the caller's transaction, as src/core/jobs/queue.ts does: through
-- graphile-worker's add_job when the queue lives in this database (`queue` = 'direct'), through
-- gatehouse_job_outbox otherwise. `p_job`: {queue, task, payload, spec} (spec as JobSpec).
CREATE FUNCTION gatehouse_submit_job(p_job json) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_job ->> 'queue' = 'outbox' THEN
    INSERT INTO gatehouse_job_outbox (op, task, payload, spec)
      VALUES ('add', p_job ->> 'task', (p_job -> 'payload')::jsonb, (p_job -> 'spec')::jsonb);
  ELSE
    PERFORM graphile_worker.add_job(
      identifier => p_job ->> 'task',
      payload => p_job -> 'payload',
      queue_name => p_job -> 'spec' ->> 'queueName',
      run_at => (p_job -> 'spec' ->> 'runAt')::timestamptz,
      max_attempts => (p_job -> 'spec' ->> 'maxAttempts')::int,
      job_key => p_job -> 'spec' ->> 'jobKey',
      priority => (p_job -> 'spec' ->> 'priority')::int,
      job_key_mode => p_job -> 'spec' ->> 'jobKeyMode');
  END IF;
END $$;

-- The events of a write, last (src/dsync/events/service.ts persistEvents): the directory's next
-- sequence numbers (the UPDATE locks the directory row until the commit), the events and their
-- outbox rows in one statement (src/dsync/store/events.ts writeEvents); then, in real-time mode, the
-- sender check: a read first, and the claim (a write of the sender row, and the sender's job) only
-- when the directory has no sender on its way. `p_events`: [{id, event, payload}] in order.
-- `p_commit`: {created_at, outbox ('none' | 'batch' | 'realtime'), sender_id, job}. Returns the
-- sequence number before the first event. Raises GHD44 when the directory is gone and GHD09 when it
-- is deactivated (the caller answers as for DirectoryUnavailable; nothing is committed).
CREATE FUNCTION gatehouse_dsync_commit_events(p_directory uuid, p_events json, p_commit json) RETURNS bigint
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
    RETURNING event_seq - v_n AS first_before, deactivated
  ), ev AS (
    INSERT INTO dsync_events (id, directory_id, seq, event, payload, created_at)
    SELECT (t.e ->> 'id')::uuid, p_directory, s.first_before + t.ord, t.e ->> 'event', t.e -> 'payload',
      (p_commit ->> 'created_at')::timestamptz
    FROM s, json_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
    RETURNING id, seq
  ), ob AS (
    INSERT INTO dsync_webhook_outbox (event_id, directory_id, seq, mode, job_id)
    SELECT ev.id, p_directory, ev.seq, v_mode, null FROM ev WHERE v_mode <> 'none'
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

-- An event as src/dsync/events/payload.ts envelope() builds it: {id, event, payload}, the payload
-- {event, tenant, product, directory_id, data}.
CREATE FUNCTION gatehouse_dsync_event(p_type text, p_tenant text, p_product text, p_directory text, p_data json)
RETURNS json LANGUAGE sql VOLATILE AS $$
  SELECT json_build_object('id', gen_random_uuid(), 'event', p_type, 'payload', json_build_object(
    'event', p_type, 'tenant', p_tenant, 'product', p_product, 'directory_id', p_directory, 'data', p_data))
$$;

-- `data` of a membership event: userRecord(user) and `group` (payload.ts), or `{id, group}` for a
-- member that is not a user of the directory. `roles` only when the stored roles are an array.
CREATE FUNCTION gatehouse_dsync_member_data(
  p_user_id text, p_found boolean, p_first_name text, p_last_name text, p_email text, p_active boolean,
  p_roles json, p_raw json, p_group json)
RETURNS json LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN NOT p_found THEN json_build_object('id', p_user_id, 'group', p_group)
    WHEN json_typeof(p_roles) = 'array' THEN json_build_object('id', p_user_id, 'first_name', p_first_name,
      'last_name', p_last_name, 'email', coalesce(p_email, ''), 'active', p_active, 'roles', p_roles, 'raw', p_raw,
      'group', p_group)
    ELSE json_build_object('id', p_user_id, 'first_name', p_first_name, 'last_name', p_last_name,
      'email', coalesce(p_email, ''), 'active', p_active, 'raw', p_raw, 'group', p_group)
  END
$$;

-- SCIM POST /Users (src/dsync/scim/users.ts createUser), for one create or several creates of one
-- directory that arrived while the previous call for it was running (one transaction, one
-- directory row lock and one commit for all of them; src/dsync/scim/one-call.ts). First the name
-- locks of every create, in one sorted order (src/core/db/locks.ts); then per create, in order:
-- the name check (a statement after the locks were granted, see the head of this file; it also
-- sees the creates before it in this call), the insert, the memberships that named the user before
-- it existed (`group.user_added` each, as resolveMemberships); then the events of all of them.
-- `p_items`: [{id, check_id (the client asked for the id: a taken id is a 409), names (userName and
-- email, lower-cased), user_name, external_id, email, first_name, last_name, active, roles, raw,
-- event (the `user.created` event)}]. Returns {before, results: [{status: 'exists'} (nothing
-- written) or {status: 'created', events}]}, in the order of `p_items`.
CREATE FUNCTION gatehouse_dsync_create_users(
  p_directory uuid, p_tenant text, p_product text, p_directory_text text, p_lock_keys text[], p_items json,
  p_commit json)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
  v_item json;
  v_id text;
  v_names text[];
  v_roles json;
  v_group json;
  v_events json[];
  v_mine json[];
  v_results json[] := '{}';
  v_all json;
  v_before bigint;
  r record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest(p_lock_keys) AS k;
  v_events := '{}';
  FOR v_item IN SELECT t.i FROM json_array_elements(p_items) WITH ORDINALITY AS t(i, n) ORDER BY t.n LOOP
    v_id := v_item ->> 'id';
    v_names := ARRAY(SELECT json_array_elements_text(v_item -> 'names'));
    -- After the locks were granted: a fresh snapshot (see the head of this file).
    IF EXISTS (
      SELECT 1 FROM dsync_users WHERE directory_id = p_directory
        AND (lower(user_name) = ANY (v_names) OR lower(email) = ANY (v_names))
    ) OR ((v_item ->> 'check_id')::boolean
      AND EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = p_directory AND id = v_id)) THEN
      v_results := v_results || json_build_object('status', 'exists');
      CONTINUE;
    END IF;
    v_roles := CASE WHEN json_typeof(v_item -> 'roles') = 'null' THEN NULL ELSE v_item -> 'roles' END;
    INSERT INTO dsync_users (directory_id, id, user_name, external_id, email, first_name, last_name, active, roles, raw)
      VALUES (p_directory, v_id, v_item ->> 'user_name', v_item ->> 'external_id', v_item ->> 'email',
        v_item ->> 'first_name', v_item ->> 'last_name', (v_item ->> 'active')::boolean, v_roles, v_item -> 'raw');
    v_mine := ARRAY[v_item -> 'event'];
    FOR r IN
      SELECT g.id, g.name, g.raw FROM dsync_group_members m
        JOIN dsync_groups g ON g.directory_id = m.directory_id AND g.id = m.group_id
      WHERE m.directory_id = p_directory AND m.user_id = v_id
      ORDER BY m.created_at, m.group_id
    LOOP
      v_group := json_build_object('id', r.id, 'name', r.name, 'raw', r.raw);
      v_mine := v_mine || gatehouse_dsync_event('group.user_added', p_tenant, p_product, p_directory_text,
        gatehouse_dsync_member_data(v_id, true, v_item ->> 'first_name', v_item ->> 'last_name', v_item ->> 'email',
          (v_item ->> 'active')::boolean, v_roles, v_item -> 'raw', v_group));
    END LOOP;
    v_events := v_events || v_mine;
    v_results := v_results || json_build_object('status', 'created', 'events', array_to_json(v_mine));
  END LOOP;
  v_all := array_to_json(v_events);
  v_before := gatehouse_dsync_commit_events(p_directory, v_all, p_commit);
  RETURN json_build_object('before', v_before, 'results', array_to_json(v_results));
END $$;

-- SCIM PATCH /Groups/{id} that only adds and removes listed members (src/dsync/scim/groups.ts
-- membersOnly, patchGroup): the group row FOR SHARE, then each operation in order, then the
-- events. `p_ops`: [{op: 'add' | 'remove', ids (in the request's order, deduplicated), sorted (the
-- same ids in the order the statement path inserts them)}]. Returns {status: 'missing'} (no such
-- group) or {status: 'ok', id, name, before, events}.
CREATE FUNCTION gatehouse_dsync_patch_members(
  p_directory uuid, p_tenant text, p_product text, p_directory_text text, p_group text, p_ops json, p_commit json)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
  g dsync_groups;
  v_group json;
  v_op json;
  v_ids text[];
  v_known dsync_users[];
  v_changed text[];
  v_events json[] := '{}';
  v_all json;
  v_before bigint := 0;
  r record;
BEGIN
  SELECT * INTO g FROM dsync_groups WHERE directory_id = p_directory AND id = p_group FOR SHARE;
  IF NOT FOUND THEN
    RETURN json_build_object('status', 'missing');
  END IF;
  v_group := json_build_object('id', g.id, 'name', g.name, 'raw', g.raw);
  FOR v_op IN SELECT t.o FROM json_array_elements(p_ops) WITH ORDINALITY AS t(o, n) ORDER BY t.n LOOP
    v_ids := ARRAY(SELECT json_array_elements_text(v_op -> 'ids'));
    IF v_op ->> 'op' = 'add' THEN
      -- As addMembers: the users read first, then the memberships inserted (in one order, so that
      -- writes adding the same members wait for each other, never in a cycle).
      v_known := ARRAY(SELECT u FROM dsync_users u WHERE u.directory_id = p_directory AND u.id = ANY (v_ids));
      WITH ins AS (
        INSERT INTO dsync_group_members (directory_id, group_id, user_id)
        SELECT p_directory, g.id, s.id FROM json_array_elements_text(v_op -> 'sorted') WITH ORDINALITY AS s(id, n)
        ORDER BY s.n
        ON CONFLICT DO NOTHING
        RETURNING user_id
      ) SELECT coalesce(array_agg(user_id), '{}') INTO v_changed FROM ins;
      FOR r IN
        SELECT a.id, k.id IS NOT NULL AS found, k.first_name, k.last_name, k.email, k.active, k.roles, k.raw
        FROM unnest(v_ids) WITH ORDINALITY AS a(id, n) LEFT JOIN unnest(v_known) AS k ON k.id = a.id
        WHERE a.id = ANY (v_changed) ORDER BY a.n
      LOOP
        v_events := v_events || gatehouse_dsync_event('group.user_added', p_tenant, p_product, p_directory_text,
          gatehouse_dsync_member_data(r.id, r.found, r.first_name, r.last_name, r.email, r.active, r.roles, r.raw,
            v_group));
      END LOOP;
    ELSE
      -- As removeMembers: the memberships deleted, then their users read; a member that is not a
      -- user makes no event.
      WITH del AS (
        DELETE FROM dsync_group_members WHERE directory_id = p_directory AND group_id = g.id AND user_id = ANY (v_ids)
        RETURNING user_id
      ) SELECT coalesce(array_agg(user_id), '{}') INTO v_changed FROM del;
      FOR r IN
        SELECT a.id, u.first_name, u.last_name, u.email, u.active, u.roles, u.raw
        FROM unnest(v_ids) WITH ORDINALITY AS a(id, n)
        JOIN dsync_users u ON u.directory_id = p_directory AND u.id = a.id
        WHERE a.id = ANY (v_changed) ORDER BY a.n
      LOOP
        v_events := v_events || gatehouse_dsync_event('group.user_removed', p_tenant, p_product, p_directory_text,
          gatehouse_dsync_member_data(r.id, true, r.first_name, r.last_name, r.email, r.active, r.roles, r.raw,
            v_group));
      END LOOP;
    END IF;
  END LOOP;
  v_all := array_to_json(v_events);
  v_before := gatehouse_dsync_commit_events(p_directory, v_all, p_commit);
  RETURN json_build_object('status', 'ok', 'id', g.id, 'name', g.name, 'before', v_before, 'events', v_all);
END $$;

-- gatehouse:down
DROP FUNCTION gatehouse_dsync_patch_members(uuid, text, text, text, text, json, json);
DROP FUNCTION gatehouse_dsync_create_users(uuid, text, text, text, text[], json, json);
DROP FUNCTION gatehouse_dsync_member_data(text, boolean, text, text, text, boolean, json, json, json);
DROP FUNCTION gatehouse_dsync_event(text, text, text, text, json);
DROP FUNCTION gatehouse_dsync_commit_events(uuid, json, json);
DROP FUNCTION gatehouse_submit_job(json);
