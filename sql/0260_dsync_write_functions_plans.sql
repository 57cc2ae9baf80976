-- The one-call SCIM writes (0240) no longer slow down as their directory fills.
--
-- A PL/pgSQL function keeps the plan of each of its statements for the life of the connection,
-- and after five executions it may keep a generic plan (made without the parameters' values) when
-- that looks no dearer than the custom ones so far
-- (https://www.postgresql.org/docs/current/plpgsql-implementation.html#PLPGSQL-PLAN-CACHING,
-- `plan_cache_mode`: https://www.postgresql.org/docs/current/runtime-config-query.html). The pooled
-- connections of a server make those five calls while a directory is still small; a generic plan
-- costed then picks any index that starts with `directory_id` (they all look like one row), and
-- nothing makes it plan again while the directory grows unless an ANALYZE of the table happens to
-- invalidate it. Measured in one session after 10 creates, then 20,000 users added
-- (test/http/dsync/write-cost-growth.test.ts; rows and buffers of the dsync tables per write):
-- - the name check ran as `Index Scan using dsync_users_created_idx, Index Cond: (directory_id =
--   $1), Filter: (lower(user_name) = ANY ($11) OR lower(email) = ANY ($11))`: every user of the
--   directory read per create (rows 49 → 36,083 and buffers 37 → 4,530 per POST /Users);
-- - the pending-membership look-up used the primary key (directory_id, group_id, user_id) with
--   user_id inside the range: every membership of the directory per create;
-- - a members PATCH read its users the same way as the name check (`u.id = ANY` as a filter over
--   the directory; rows 59 → 40,087 and buffers 40 → 4,520 per PATCH).
-- The statements whose plan depends on the directory's size now run through EXECUTE, which plans
-- them for each call with the values and the table as they are
-- (https://www.postgresql.org/docs/current/plpgsql-statements.html#PLPGSQL-STATEMENTS-EXECUTING-DYN);
-- those that can use only one index (the directory row, the sender row, the inserts) keep their
-- cached plans. A member removal deletes one member per statement: even planned per call, the
-- whole list as `user_id = ANY (…)` was planned, while the table had no statistics yet, as the
-- primary key's range of the group with the list as a filter (every member of a 20,000-member
-- group read per PATCH). After: 10 rows and 53 buffers per create, 15 rows and 46 buffers per
-- PATCH at 20,000 users (the buffers grow only with the depth of the B-trees).
-- Each EXECUTE is one statement with a fresh snapshot, as before, so the snapshot rules at the head
-- of 0240 hold unchanged. EXECUTE does not set FOUND: row counts are read with GET DIAGNOSTICS.
-- Everything else is 0240's code, unchanged.
-- CockroachDB never had these functions (sql/cockroach/0240); its variant of this file is empty.

CREATE OR REPLACE FUNCTION gatehouse_dsync_create_users(
  p_directory uuid, p_tenant text, p_product text, p_directory_text text, p_lock_keys text[], p_items json,
  p_commit json)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
  v_item json;
  v_id text;
  v_names text[];
  v_taken boolean;
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
    -- After the locks were granted: a fresh snapshot (see the head of 0240). Planned per call: the
    -- two name indexes (or the primary key for the id), whatever the directory's size.
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = $1
        AND (lower(user_name) = ANY ($2) OR lower(email) = ANY ($2)))
      OR ($3 AND EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = $1 AND id = $4))'
      INTO v_taken USING p_directory, v_names, (v_item ->> 'check_id')::boolean, v_id;
    IF v_taken THEN
      v_results := v_results || json_build_object('status', 'exists');
      CONTINUE;
    END IF;
    v_roles := CASE WHEN json_typeof(v_item -> 'roles') = 'null' THEN NULL ELSE v_item -> 'roles' END;
    INSERT INTO dsync_users (directory_id, id, user_name, external_id, email, first_name, last_name, active, roles, raw)
      VALUES (p_directory, v_id, v_item ->> 'user_name', v_item ->> 'external_id', v_item ->> 'email',
        v_item ->> 'first_name', v_item ->> 'last_name', (v_item ->> 'active')::boolean, v_roles, v_item -> 'raw');
    v_mine := ARRAY[v_item -> 'event'];
    FOR r IN EXECUTE
      'SELECT g.id, g.name, g.raw FROM dsync_group_members m
        JOIN dsync_groups g ON g.directory_id = m.directory_id AND g.id = m.group_id
      WHERE m.directory_id = $1 AND m.user_id = $2
      ORDER BY m.created_at, m.group_id' USING p_directory, v_id
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

CREATE OR REPLACE FUNCTION gatehouse_dsync_patch_members(
  p_directory uuid, p_tenant text, p_product text, p_directory_text text, p_group text, p_ops json, p_commit json)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
  g dsync_groups;
  v_found bigint;
  v_group json;
  v_op json;
  v_ids text[];
  v_known dsync_users[];
  v_changed text[];
  v_uid text;
  v_del text;
  v_events json[] := '{}';
  v_all json;
  v_before bigint := 0;
  r record;
BEGIN
  EXECUTE 'SELECT * FROM dsync_groups WHERE directory_id = $1 AND id = $2 FOR SHARE' INTO g USING p_directory, p_group;
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found = 0 THEN
    RETURN json_build_object('status', 'missing');
  END IF;
  v_group := json_build_object('id', g.id, 'name', g.name, 'raw', g.raw);
  FOR v_op IN SELECT t.o FROM json_array_elements(p_ops) WITH ORDINALITY AS t(o, n) ORDER BY t.n LOOP
    v_ids := ARRAY(SELECT json_array_elements_text(v_op -> 'ids'));
    IF v_op ->> 'op' = 'add' THEN
      -- As addMembers: the users read first, then the memberships inserted (in one order, so that
      -- writes adding the same members wait for each other, never in a cycle).
      EXECUTE 'SELECT ARRAY(SELECT u FROM dsync_users u WHERE u.directory_id = $1 AND u.id = ANY ($2))'
        INTO v_known USING p_directory, v_ids;
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
      -- One member per statement, in one order (so that writes removing the same members wait for
      -- each other, never in a cycle): with the whole list as `user_id = ANY (…)`, a plan may take
      -- the primary key's range of the group and filter the list (every member of the group read).
      v_changed := '{}';
      FOREACH v_uid IN ARRAY ARRAY(SELECT DISTINCT unnest(v_ids) ORDER BY 1) LOOP
        EXECUTE 'DELETE FROM dsync_group_members WHERE directory_id = $1 AND group_id = $2 AND user_id = $3
          RETURNING user_id' INTO v_del USING p_directory, g.id, v_uid;
        IF v_del IS NOT NULL THEN
          v_changed := v_changed || v_del;
        END IF;
      END LOOP;
      FOR r IN EXECUTE
        'SELECT a.id, u.first_name, u.last_name, u.email, u.active, u.roles, u.raw
        FROM unnest($2) WITH ORDINALITY AS a(id, n)
        JOIN dsync_users u ON u.directory_id = $1 AND u.id = a.id
        WHERE a.id = ANY ($3) ORDER BY a.n' USING p_directory, v_ids, v_changed
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
-- 0240's definitions.
CREATE OR REPLACE FUNCTION gatehouse_dsync_create_users(
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

CREATE OR REPLACE FUNCTION gatehouse_dsync_patch_members(
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
