/**
 * The statements a planned directory change is made of (src/dsync/change/plan.ts): reads that
 * return one json value as text, and writes that return the keys they touched as a json array
 * (text). Each statement takes one parameter, `$1`, a json object of its values, so that the same
 * text runs inside gatehouse_dsync_apply on PostgreSQL (EXECUTE … USING, planned per call with the
 * values as they are: sql/0270_dsync_apply.sql) and as a statement of its own on CockroachDB
 * (change/apply.ts). Lists of ids travel as array literals (`textArray`), so that the planner sees
 * their values.
 *
 * A read's text is compared with the text the plan expects: the same row always reads as the same
 * text (the columns' stored json kept as it is), so a plan made from an earlier read is applied
 * only if what it read is still there.
 */
import type { DsyncGroup, DsyncUser, Raw } from '../types.ts';

/** One statement: SQL whose `$1` is `params` as json. */
export interface Statement {
  sql: string;
  params: Record<string, unknown>;
}

/** A read of a change: its fact's key (the same key is the same read), the statement, and how to read its value. */
export interface Read<T> {
  key: string;
  stmt: Statement;
  decode: (v: unknown) => T;
  /** It locks the row it reads (FOR UPDATE, FOR SHARE): the change is not sent together with others. */
  locks?: boolean;
  /** Its fact is worth keeping for later writes (a row: a group or user written again soon). */
  kept?: boolean;
}

/** A PostgreSQL array literal of these strings (`{"a","b"}`), to be cast with `::text[]`. */
export const textArray = (values: readonly string[]): string =>
  `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;

const DIR = `($1::json ->> 'd')::uuid`;
const lockClause = (lock: 'update' | 'share' | undefined) =>
  lock === 'update' ? ' FOR UPDATE' : lock === 'share' ? ' FOR SHARE' : '';

// ---- rows as facts ----------------------------------------------------------------------------

const USER_JSON = `json_build_object('id', u.id, 'user_name', u.user_name, 'external_id', u.external_id,
  'email', u.email, 'first_name', u.first_name, 'last_name', u.last_name, 'active', u.active, 'roles', u.roles,
  'raw', u.raw)`;
const GROUP_JSON = `json_build_object('id', g.id, 'name', g.name, 'external_id', g.external_id, 'raw', g.raw)`;

interface UserFact {
  id: string;
  user_name: string | null;
  external_id: string | null;
  email: string | null;
  first_name: string;
  last_name: string;
  active: boolean;
  roles: unknown;
  raw: Raw;
}
interface GroupFact {
  id: string;
  name: string;
  external_id: string | null;
  raw: Raw;
}

const toUser = (directoryId: string, f: UserFact): DsyncUser => ({
  directoryId,
  id: f.id,
  userName: f.user_name,
  externalId: f.external_id,
  email: f.email,
  firstName: f.first_name,
  lastName: f.last_name,
  active: f.active,
  roles: Array.isArray(f.roles) ? f.roles : undefined,
  raw: f.raw,
});

const toGroup = (directoryId: string, f: GroupFact): DsyncGroup => ({
  directoryId,
  id: f.id,
  name: f.name,
  externalId: f.external_id,
  raw: f.raw,
});

// ---- reads ------------------------------------------------------------------------------------

/**
 * Whether a user of the directory has one of these names (userName or email, case-insensitive),
 * other than user `except`, or has id `id`.
 */
export const userTaken = (
  directoryId: string,
  names: string[],
  o: { id?: string | undefined; except?: string } = {},
): Read<boolean> => {
  const lower = names.map((n) => n.toLowerCase());
  return {
    key: `user-taken:${directoryId}:${o.id ?? ''}:${o.except ?? ''}:${lower.join('\u0001')}`,
    stmt: {
      sql: `SELECT to_json(EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = ${DIR}
          AND (lower(user_name) = ANY (($1::json ->> 'names')::text[]) OR lower(email) = ANY (($1::json ->> 'names')::text[]))
          AND (($1::json ->> 'except') IS NULL OR id <> $1::json ->> 'except'))
        OR (($1::json ->> 'id') IS NOT NULL
          AND EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = ${DIR} AND id = $1::json ->> 'id')))::text`,
      params: { d: directoryId, names: textArray(lower), id: o.id, except: o.except },
    },
    decode: (v) => v === true,
  };
};

/** Whether a group of the directory has this displayName (case-insensitive) or this id. */
export const groupTaken = (directoryId: string, name: string, id?: string): Read<boolean> => ({
  key: `group-taken:${directoryId}:${id ?? ''}:${name}`,
  stmt: {
    sql: `SELECT to_json(EXISTS (SELECT 1 FROM dsync_groups WHERE directory_id = ${DIR}
        AND lower(name) = lower($1::json ->> 'name'))
      OR (($1::json ->> 'id') IS NOT NULL
        AND EXISTS (SELECT 1 FROM dsync_groups WHERE directory_id = ${DIR} AND id = $1::json ->> 'id')))::text`,
    params: { d: directoryId, name, id },
  },
  decode: (v) => v === true,
});

/** A user of the directory, or undefined; `lock` locks its row until the transaction ends. */
export const user = (directoryId: string, id: string, lock?: 'update'): Read<DsyncUser | undefined> => ({
  key: `user:${directoryId}:${id}`,
  stmt: {
    sql: `SELECT ${USER_JSON}::text FROM dsync_users u WHERE u.directory_id = ${DIR} AND u.id = $1::json ->> 'id'${lockClause(lock)}`,
    params: { d: directoryId, id },
  },
  decode: (v) => (v ? toUser(directoryId, v as UserFact) : undefined),
  locks: lock !== undefined,
  kept: true,
});

/** Whether the user exists, its row locked until the transaction ends (a write that replaces it). */
export const userExists = (directoryId: string, id: string): Read<boolean> => ({
  key: `user-exists:${directoryId}:${id}`,
  stmt: {
    sql: `SELECT 'true' FROM dsync_users u WHERE u.directory_id = ${DIR} AND u.id = $1::json ->> 'id' FOR UPDATE`,
    params: { d: directoryId, id },
  },
  decode: (v) => v === true,
  locks: true,
});

/** The users of the directory with these ids (those that are users), by id. */
export const users = (directoryId: string, ids: string[]): Read<Map<string, DsyncUser>> => ({
  key: `users:${directoryId}:${ids.join('\u0001')}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(CASE WHEN u.id IS NULL THEN NULL ELSE ${USER_JSON} END ORDER BY a.n), '[]'::json)::text
      FROM unnest(($1::json ->> 'ids')::text[]) WITH ORDINALITY AS a(id, n)
      LEFT JOIN dsync_users u ON u.directory_id = ${DIR} AND u.id = a.id`,
    params: { d: directoryId, ids: textArray(ids) },
  },
  decode: (v) =>
    new Map(((v as Array<UserFact | null>) ?? []).flatMap((f) => (f ? [[f.id, toUser(directoryId, f)] as const] : []))),
  kept: true,
});

/** A group of the directory, or undefined; `lock` locks its row (`share`: shared with other such writes). */
export const group = (directoryId: string, id: string, lock?: 'update' | 'share'): Read<DsyncGroup | undefined> => ({
  key: `group:${directoryId}:${id}`,
  stmt: {
    sql: `SELECT ${GROUP_JSON}::text FROM dsync_groups g WHERE g.directory_id = ${DIR} AND g.id = $1::json ->> 'id'${lockClause(lock)}`,
    params: { d: directoryId, id },
  },
  decode: (v) => (v ? toGroup(directoryId, v as GroupFact) : undefined),
  locks: lock !== undefined,
  kept: true,
});

/**
 * The groups that list this user id as a member (memberships made before the user existed), oldest
 * membership first.
 */
export const groupsListing = (directoryId: string, userId: string): Read<DsyncGroup[]> => ({
  key: `groups-listing:${directoryId}:${userId}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(${GROUP_JSON} ORDER BY m.created_at, m.group_id), '[]'::json)::text
      FROM dsync_group_members m JOIN dsync_groups g ON g.directory_id = m.directory_id AND g.id = m.group_id
      WHERE m.directory_id = ${DIR} AND m.user_id = $1::json ->> 'user'`,
    params: { d: directoryId, user: userId },
  },
  decode: (v) => ((v as GroupFact[]) ?? []).map((f) => toGroup(directoryId, f)),
});

const byId = <T extends { id: string }>(items: T[]) => items.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** The first `limit` users of the directory in id order (a bulk delete's next batch). */
export const firstUsers = (directoryId: string, limit: number): Read<DsyncUser[]> => ({
  key: `first-users:${directoryId}:${limit}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(${USER_JSON} ORDER BY u.id), '[]'::json)::text FROM (
        SELECT * FROM dsync_users WHERE directory_id = ${DIR} ORDER BY id LIMIT ($1::json ->> 'limit')::int) u`,
    params: { d: directoryId, limit },
  },
  decode: (v) => byId(((v as UserFact[]) ?? []).map((f) => toUser(directoryId, f))),
});

/** The first `limit` groups of the directory in id order (a bulk delete's next batch). */
export const firstGroups = (directoryId: string, limit: number): Read<DsyncGroup[]> => ({
  key: `first-groups:${directoryId}:${limit}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(${GROUP_JSON} ORDER BY g.id), '[]'::json)::text FROM (
        SELECT * FROM dsync_groups WHERE directory_id = ${DIR} ORDER BY id LIMIT ($1::json ->> 'limit')::int) g`,
    params: { d: directoryId, limit },
  },
  decode: (v) => byId(((v as GroupFact[]) ?? []).map((f) => toGroup(directoryId, f))),
});

/** The member user ids of a group, oldest membership first. */
export const memberIds = (directoryId: string, groupId: string): Read<string[]> => ({
  key: `members:${directoryId}:${groupId}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(m.user_id ORDER BY m.created_at, m.user_id), '[]'::json)::text
      FROM dsync_group_members m WHERE m.directory_id = ${DIR} AND m.group_id = $1::json ->> 'group'`,
    params: { d: directoryId, group: groupId },
  },
  decode: (v) => (v as string[]) ?? [],
});

// ---- writes -------------------------------------------------------------------------------------

/** The keys a write returns, as json text: `keyed('id', 'INSERT … RETURNING id')`. */
const keyed = (column: string, dml: string) =>
  `WITH w AS (${dml}) SELECT coalesce(json_agg(w.${column}), '[]'::json)::text FROM w`;

const userColumns = (u: DsyncUser) => ({
  id: u.id,
  user_name: u.userName,
  external_id: u.externalId,
  email: u.email,
  first_name: u.firstName,
  last_name: u.lastName,
  active: u.active,
  // absent (SQL null) when the user has no roles
  roles: u.roles,
  raw: u.raw,
});

/** Inserts users of one directory (in one statement); returns their ids. */
export const insertUsers = (directoryId: string, rows: DsyncUser[]): Statement => ({
  sql: keyed(
    'id',
    `INSERT INTO dsync_users (directory_id, id, user_name, external_id, email, first_name, last_name, active, roles, raw)
      SELECT ${DIR}, r.u ->> 'id', r.u ->> 'user_name', r.u ->> 'external_id', r.u ->> 'email', r.u ->> 'first_name',
        r.u ->> 'last_name', (r.u ->> 'active')::boolean, r.u -> 'roles', r.u -> 'raw'
      FROM json_array_elements($1::json -> 'users') AS r(u)
      RETURNING id`,
  ),
  params: { d: directoryId, users: rows.map(userColumns) },
});

/** Writes the user's columns; returns its id when it exists. */
export const updateUser = (u: DsyncUser): Statement => ({
  sql: keyed(
    'id',
    `UPDATE dsync_users SET user_name = $1::json ->> 'user_name', external_id = $1::json ->> 'external_id',
        email = $1::json ->> 'email', first_name = $1::json ->> 'first_name', last_name = $1::json ->> 'last_name',
        active = ($1::json ->> 'active')::boolean, roles = $1::json -> 'roles', raw = $1::json -> 'raw', updated_at = now()
      WHERE directory_id = ${DIR} AND id = $1::json ->> 'id'
      RETURNING id`,
  ),
  params: { d: u.directoryId, ...userColumns(u) },
});

/**
 * Deletes these users and their memberships (without events, as Jackson emits only
 * `user.deleted`); returns the ids of the users deleted.
 */
export const deleteUsers = (directoryId: string, ids: string[]): Statement => ({
  sql: `WITH w AS (
      DELETE FROM dsync_users WHERE directory_id = ${DIR} AND id = ANY (($1::json ->> 'ids')::text[]) RETURNING id
    ), m AS (
      DELETE FROM dsync_group_members WHERE directory_id = ${DIR} AND user_id = ANY (($1::json ->> 'ids')::text[])
    )
    SELECT coalesce(json_agg(w.id), '[]'::json)::text FROM w`,
  params: { d: directoryId, ids: textArray(ids) },
});

/** Frees the userName and email of these users (a rename cycle is then written in the same change). */
export const clearUserNames = (directoryId: string, ids: string[]): Statement => ({
  sql: keyed(
    'id',
    `UPDATE dsync_users SET user_name = NULL, email = NULL
      WHERE directory_id = ${DIR} AND id = ANY (($1::json ->> 'ids')::text[]) RETURNING id`,
  ),
  params: { d: directoryId, ids: textArray(ids) },
});

const groupColumns = (g: DsyncGroup) => ({ id: g.id, name: g.name, external_id: g.externalId, raw: g.raw });

/** Inserts groups of one directory (in one statement); returns their ids. */
export const insertGroups = (directoryId: string, rows: DsyncGroup[]): Statement => ({
  sql: keyed(
    'id',
    `INSERT INTO dsync_groups (directory_id, id, name, external_id, raw)
      SELECT ${DIR}, r.g ->> 'id', r.g ->> 'name', r.g ->> 'external_id', r.g -> 'raw'
      FROM json_array_elements($1::json -> 'groups') AS r(g)
      RETURNING id`,
  ),
  params: { d: directoryId, groups: rows.map(groupColumns) },
});

/** Writes the group's columns; returns its id when it exists. */
export const updateGroup = (g: DsyncGroup): Statement => ({
  sql: keyed(
    'id',
    `UPDATE dsync_groups SET name = $1::json ->> 'name', external_id = $1::json ->> 'external_id',
        raw = $1::json -> 'raw', updated_at = now()
      WHERE directory_id = ${DIR} AND id = $1::json ->> 'id'
      RETURNING id`,
  ),
  params: { d: g.directoryId, ...groupColumns(g) },
});

/** Deletes these groups (their memberships go by foreign key); returns the ids deleted. */
export const deleteGroups = (directoryId: string, ids: string[]): Statement => ({
  sql: keyed(
    'id',
    `DELETE FROM dsync_groups WHERE directory_id = ${DIR} AND id = ANY (($1::json ->> 'ids')::text[]) RETURNING id`,
  ),
  params: { d: directoryId, ids: textArray(ids) },
});

/**
 * Adds these members to the group where they are not members yet; returns the user ids added. The
 * rows are inserted in one sorted order, so that writes adding the same members at once wait for
 * each other, never in a cycle.
 */
export const addMembers = (directoryId: string, groupId: string, userIds: string[]): Statement => ({
  sql: keyed(
    'user_id',
    `INSERT INTO dsync_group_members (directory_id, group_id, user_id)
      SELECT ${DIR}, $1::json ->> 'group', a.id
      FROM unnest(($1::json ->> 'ids')::text[]) WITH ORDINALITY AS a(id, n) ORDER BY a.n
      ON CONFLICT DO NOTHING
      RETURNING user_id`,
  ),
  params: { d: directoryId, group: groupId, ids: textArray([...new Set(userIds)].sort()) },
});

/**
 * Removes one member of the group (all three key columns given, so that its plan is the primary key
 * whatever the group's size); returns the user id when it was a member.
 */
export const removeMember = (directoryId: string, groupId: string, userId: string): Statement => ({
  sql: keyed(
    'user_id',
    `DELETE FROM dsync_group_members
      WHERE directory_id = ${DIR} AND group_id = $1::json ->> 'group' AND user_id = $1::json ->> 'user'
      RETURNING user_id`,
  ),
  params: { d: directoryId, group: groupId, user: userId },
});

/** Removes every member of the group; returns their user ids. */
export const removeAllMembers = (directoryId: string, groupId: string): Statement => ({
  sql: keyed(
    'user_id',
    `DELETE FROM dsync_group_members WHERE directory_id = ${DIR} AND group_id = $1::json ->> 'group' RETURNING user_id`,
  ),
  params: { d: directoryId, group: groupId },
});
