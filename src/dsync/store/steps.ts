/**
 * The statements a planned directory change is made of (src/dsync/change/plan.ts): reads that
 * return one json value as text, and writes that return the keys they touched as a json array
 * (text; `plain` writes return nothing). Each statement carries its values as literals (`lit`), so that the same text runs inside
 * gatehouse_dsync_apply on PostgreSQL (EXECUTE: planned for this call with the values as constants,
 * whatever the size of the directory; sql/0270_dsync_apply.sql) and as a statement of its own on
 * CockroachDB (change/apply.ts).
 *
 * A read's text is compared with the text the plan expects: the same row always reads as the same
 * text (the columns' stored json kept as it is), so a plan made from an earlier read is applied
 * only if what it read is still there.
 */
import { ENTERPRISE_FIELDS, enterpriseOf } from '../enterprise.ts';
import type { DsyncGroup, DsyncUser, Raw } from '../types.ts';

const ENTERPRISE_COLUMNS = ENTERPRISE_FIELDS.map((f) => f.column).join(', ');

/** One statement: SQL text with its values inlined as literals, or with arguments. */
export interface Statement {
  sql: string;
  /** The values of `$1`, `$2`… as text (their types are the casts in `sql`): a prepared statement. */
  args?: Array<string | null>;
  /** A write whose keys nothing needs: it returns nothing (its keys read as `[]`). */
  plain?: true;
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

/** A value PostgreSQL cannot store in text (as its input would refuse it): a data exception, answered 400. */
class UnstorableValue extends Error {
  readonly code = '22021';
}

/**
 * A string literal (E'…': backslashes and quotes escaped, whatever `standard_conforming_strings`
 * says). NUL and lone surrogates cannot be text in PostgreSQL: refused as a data exception.
 */
function quote(s: string): string {
  if (s.includes('\u0000') || !s.isWellFormed())
    throw new UnstorableValue('a value contains a character that cannot be stored');
  return /['\\]/.test(s) ? `E'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'` : `E'${s}'`;
}

/** Literals of the values a statement carries (a round-trip test reads them back from PostgreSQL). */
export const lit = {
  text: (v: string | null | undefined) => (v === null || v === undefined ? 'NULL' : `${quote(v)}::text`),
  uuid: (v: string) => `${quote(v)}::uuid`,
  bool: (v: boolean) => (v ? 'true' : 'false'),
  int: (v: number) => String(Math.trunc(v)),
  /** json, its text as JSON.stringify writes it (NULL for undefined). */
  json: (v: unknown) => (v === undefined ? 'NULL' : `${quote(JSON.stringify(v))}::json`),
  /** text[], a constant array (its size and values known to the planner). */
  texts: (vs: readonly string[]) =>
    `${quote(`{${vs.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`)}::text[]`,
};

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

const byId = <T extends { id: string }>(items: T[]) => items.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

// ---- reads ------------------------------------------------------------------------------------

/** The condition that a user of the directory has one of these (lower-cased) names other than `except`, or id `id`. */
function takenSql(directoryId: string, lower: string[], o: { id?: string | undefined; except?: string }): string {
  const d = lit.uuid(directoryId);
  const clash = lower.length
    ? `EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = ${d}
        AND (lower(user_name) = ANY (${lit.texts(lower)}) OR lower(email) = ANY (${lit.texts(lower)}))
        ${o.except === undefined ? '' : `AND id <> ${lit.text(o.except)}`})`
    : 'false';
  const id =
    o.id === undefined
      ? 'false'
      : `EXISTS (SELECT 1 FROM dsync_users WHERE directory_id = ${d} AND id = ${lit.text(o.id)})`;
  return `(${clash} OR ${id})`;
}

const lowered = (names: string[]) => [...new Set(names.map((n) => n.toLowerCase()))];

/**
 * Whether a user of the directory has one of these names (userName or email, case-insensitive),
 * other than user `except`, or has id `id`.
 */
export const userTaken = (
  directoryId: string,
  names: string[],
  o: { id?: string | undefined; except?: string } = {},
): Read<boolean> => {
  const lower = lowered(names);
  return {
    key: `user-taken:${directoryId}:${o.id ?? ''}:${o.except ?? ''}:${lower.join('\u0001')}`,
    stmt: { sql: `SELECT to_json${takenSql(directoryId, lower, o)}::text` },
    decode: (v) => v === true,
  };
};

/** Whether a group of the directory has this displayName (case-insensitive) or this id. */
export const groupTaken = (directoryId: string, name: string, id?: string): Read<boolean> => {
  const d = lit.uuid(directoryId);
  const byName = `EXISTS (SELECT 1 FROM dsync_groups WHERE directory_id = ${d} AND lower(name) = lower(${lit.text(name)}))`;
  const byId =
    id === undefined
      ? 'false'
      : `EXISTS (SELECT 1 FROM dsync_groups WHERE directory_id = ${d} AND id = ${lit.text(id)})`;
  return {
    key: `group-taken:${directoryId}:${id ?? ''}:${name}`,
    stmt: { sql: `SELECT to_json(${byName} OR ${byId})::text` },
    decode: (v) => v === true,
  };
};

/** A user of the directory, or undefined; `lock` locks its row until the transaction ends. */
export const user = (directoryId: string, id: string, lock?: 'update'): Read<DsyncUser | undefined> => ({
  key: `user:${directoryId}:${id}`,
  stmt: {
    sql: `SELECT ${USER_JSON}::text FROM dsync_users u
      WHERE u.directory_id = ${lit.uuid(directoryId)} AND u.id = ${lit.text(id)}${lockClause(lock)}`,
  },
  decode: (v) => (v ? toUser(directoryId, v as UserFact) : undefined),
  locks: lock !== undefined,
  kept: true,
});

/** Whether the user exists, its row locked until the transaction ends (a write that replaces it). */
export const userExists = (directoryId: string, id: string): Read<boolean> => ({
  key: `user-exists:${directoryId}:${id}`,
  stmt: {
    sql: `SELECT 'true' FROM dsync_users u
      WHERE u.directory_id = ${lit.uuid(directoryId)} AND u.id = ${lit.text(id)} FOR UPDATE`,
  },
  decode: (v) => v === true,
  locks: true,
});

/** The users of the directory with these ids (those that are users), by id. */
export const users = (directoryId: string, ids: string[]): Read<Map<string, DsyncUser>> => ({
  key: `users:${directoryId}:${ids.join('\u0001')}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(CASE WHEN u.id IS NULL THEN NULL ELSE ${USER_JSON} END ORDER BY a.n), '[]'::json)::text
      FROM unnest(${lit.texts(ids)}) WITH ORDINALITY AS a(id, n)
      LEFT JOIN dsync_users u ON u.directory_id = ${lit.uuid(directoryId)} AND u.id = a.id`,
  },
  decode: (v) =>
    new Map(((v as Array<UserFact | null>) ?? []).flatMap((f) => (f ? [[f.id, toUser(directoryId, f)] as const] : []))),
  kept: true,
});

/** A group of the directory, or undefined; `lock` locks its row (`share`: shared with other such writes). */
export const group = (directoryId: string, id: string, lock?: 'update' | 'share'): Read<DsyncGroup | undefined> => ({
  key: `group:${directoryId}:${id}`,
  stmt: {
    sql: `SELECT ${GROUP_JSON}::text FROM dsync_groups g
      WHERE g.directory_id = ${lit.uuid(directoryId)} AND g.id = ${lit.text(id)}${lockClause(lock)}`,
  },
  decode: (v) => (v ? toGroup(directoryId, v as GroupFact) : undefined),
  locks: lock !== undefined,
  kept: true,
});

/**
 * What a create of user `userId` finds, in one statement: `taken` when a user of the directory has
 * one of these names (userName or email, case-insensitive) or, when given, the id `id`; else the
 * ids of the groups that already list `userId` as a member (memberships made before the user
 * existed), oldest membership first. Nothing taken and no such group reads `[]`. (The groups
 * themselves are a read of their own, `groups`, made only when there are some: a statement of one
 * table is quicker to plan, and every create plans it.)
 */
export const createCheck = (
  directoryId: string,
  names: string[],
  userId: string,
  id?: string,
): Read<{ taken: boolean; listing: string[] }> => {
  const lower = lowered(names);
  return {
    key: `create-check:${directoryId}:${userId}:${id ?? ''}:${lower.join('\u0001')}`,
    stmt: {
      sql: `SELECT CASE WHEN ${takenSql(directoryId, lower, { id })} THEN 'true'
        ELSE (SELECT coalesce(json_agg(m.group_id ORDER BY m.created_at, m.group_id), '[]'::json)::text
          FROM dsync_group_members m WHERE m.directory_id = ${lit.uuid(directoryId)} AND m.user_id = ${lit.text(userId)})
        END`,
    },
    decode: (v) => (v === true ? { taken: true, listing: [] } : { taken: false, listing: (v as string[]) ?? [] }),
  };
};

/** The groups of the directory with these ids, in that order (those that exist). */
export const groups = (directoryId: string, ids: string[]): Read<DsyncGroup[]> => ({
  key: `groups:${directoryId}:${ids.join('\u0001')}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(${GROUP_JSON} ORDER BY a.n), '[]'::json)::text
      FROM unnest(${lit.texts(ids)}) WITH ORDINALITY AS a(id, n)
      JOIN dsync_groups g ON g.directory_id = ${lit.uuid(directoryId)} AND g.id = a.id`,
  },
  decode: (v) => ((v as GroupFact[]) ?? []).map((f) => toGroup(directoryId, f)),
});

/** The first `limit` users of the directory in id order (a bulk delete's next batch). */
export const firstUsers = (directoryId: string, limit: number): Read<DsyncUser[]> => ({
  key: `first-users:${directoryId}:${limit}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(${USER_JSON} ORDER BY u.id), '[]'::json)::text FROM (
        SELECT * FROM dsync_users WHERE directory_id = ${lit.uuid(directoryId)} ORDER BY id LIMIT ${lit.int(limit)}) u`,
  },
  decode: (v) => byId(((v as UserFact[]) ?? []).map((f) => toUser(directoryId, f))),
});

/** The first `limit` groups of the directory in id order (a bulk delete's next batch). */
export const firstGroups = (directoryId: string, limit: number): Read<DsyncGroup[]> => ({
  key: `first-groups:${directoryId}:${limit}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(${GROUP_JSON} ORDER BY g.id), '[]'::json)::text FROM (
        SELECT * FROM dsync_groups WHERE directory_id = ${lit.uuid(directoryId)} ORDER BY id LIMIT ${lit.int(limit)}) g`,
  },
  decode: (v) => byId(((v as GroupFact[]) ?? []).map((f) => toGroup(directoryId, f))),
});

/** The member user ids of a group, oldest membership first. */
export const memberIds = (directoryId: string, groupId: string): Read<string[]> => ({
  key: `members:${directoryId}:${groupId}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(m.user_id ORDER BY m.created_at, m.user_id), '[]'::json)::text
      FROM dsync_group_members m WHERE m.directory_id = ${lit.uuid(directoryId)} AND m.group_id = ${lit.text(groupId)}`,
  },
  decode: (v) => (v as string[]) ?? [],
});

/** The ids of the groups the user is a member of, oldest membership first. */
export const groupIdsOf = (directoryId: string, userId: string): Read<string[]> => ({
  key: `groups-of:${directoryId}:${userId}`,
  stmt: {
    sql: `SELECT coalesce(json_agg(m.group_id ORDER BY m.created_at, m.group_id), '[]'::json)::text
      FROM dsync_group_members m WHERE m.directory_id = ${lit.uuid(directoryId)} AND m.user_id = ${lit.text(userId)}`,
  },
  decode: (v) => (v as string[]) ?? [],
});

// ---- writes -------------------------------------------------------------------------------------

/** The keys a write returns, as json text: `keyed('id', 'INSERT … RETURNING id')`. */
const keyed = (column: string, dml: string): Statement => ({
  sql: `WITH w AS (${dml}) SELECT coalesce(json_agg(w.${column}), '[]'::json)::text FROM w`,
});

/** A write whose keys no event needs (quicker to plan: no aggregate around it). */
const plain = (dml: string): Statement => ({ sql: dml, plain: true });

/** The user's columns after (directory_id, id), in the order of USER_COLUMNS. */
const userValues = (u: DsyncUser, enterprise = enterpriseOf(u.raw)) =>
  [
    lit.text(u.userName),
    lit.text(u.externalId),
    lit.text(u.email),
    lit.text(u.firstName),
    lit.text(u.lastName),
    lit.bool(u.active),
    // NULL when the user has no roles
    lit.json(u.roles),
    lit.json(u.raw),
    // The enterprise extension's columns, copies of `raw` (sql/0290)
    ...ENTERPRISE_FIELDS.map((f) => lit.text(enterprise[f.key])),
  ].join(', ');

/** Inserts users of one directory (in one statement). */
export const insertUsers = (directoryId: string, rows: DsyncUser[]): Statement =>
  plain(
    `INSERT INTO dsync_users (directory_id, id, user_name, external_id, email, first_name, last_name, active, roles, raw,
        ${ENTERPRISE_COLUMNS})
      VALUES ${rows.map((u) => `(${lit.uuid(directoryId)}, ${lit.text(u.id)}, ${userValues(u)})`).join(', ')}`,
  );

/** Writes the user's columns. */
export const updateUser = (u: DsyncUser): Statement =>
  plain(
    `UPDATE dsync_users SET (user_name, external_id, email, first_name, last_name, active, roles, raw,
        ${ENTERPRISE_COLUMNS}, updated_at)
        = (${userValues(u)}, now())
      WHERE directory_id = ${lit.uuid(u.directoryId)} AND id = ${lit.text(u.id)}`,
  );

/**
 * Deletes these users and their memberships (without events, as Jackson emits only
 * `user.deleted`); returns the ids of the users deleted.
 */
export const deleteUsers = (directoryId: string, ids: string[]): Statement => ({
  sql: `WITH w AS (
      DELETE FROM dsync_users WHERE directory_id = ${lit.uuid(directoryId)} AND id = ANY (${lit.texts(ids)}) RETURNING id
    ), m AS (
      DELETE FROM dsync_group_members WHERE directory_id = ${lit.uuid(directoryId)} AND user_id = ANY (${lit.texts(ids)})
    )
    SELECT coalesce(json_agg(w.id), '[]'::json)::text FROM w`,
});

/** Frees the userName and email of these users (a rename cycle is then written in the same change). */
export const clearUserNames = (directoryId: string, ids: string[]): Statement =>
  plain(
    `UPDATE dsync_users SET user_name = NULL, email = NULL
      WHERE directory_id = ${lit.uuid(directoryId)} AND id = ANY (${lit.texts(ids)})`,
  );

const groupValues = (g: DsyncGroup) => [lit.text(g.name), lit.text(g.externalId), lit.json(g.raw)].join(', ');

/** Inserts groups of one directory (in one statement). */
export const insertGroups = (directoryId: string, rows: DsyncGroup[]): Statement =>
  plain(
    `INSERT INTO dsync_groups (directory_id, id, name, external_id, raw)
      VALUES ${rows.map((g) => `(${lit.uuid(directoryId)}, ${lit.text(g.id)}, ${groupValues(g)})`).join(', ')}`,
  );

/** Writes the group's columns. */
export const updateGroup = (g: DsyncGroup): Statement =>
  plain(
    `UPDATE dsync_groups SET (name, external_id, raw, updated_at) = (${groupValues(g)}, now())
      WHERE directory_id = ${lit.uuid(g.directoryId)} AND id = ${lit.text(g.id)}`,
  );

/** Deletes these groups (their memberships go by foreign key); returns the ids deleted. */
export const deleteGroups = (directoryId: string, ids: string[]): Statement =>
  keyed(
    'id',
    `DELETE FROM dsync_groups WHERE directory_id = ${lit.uuid(directoryId)} AND id = ANY (${lit.texts(ids)}) RETURNING id`,
  );

/**
 * Adds these members to the group where they are not members yet; returns the user ids added. The
 * rows are inserted in one sorted order, so that writes adding the same members at once wait for
 * each other, never in a cycle.
 */
export const addMembers = (directoryId: string, groupId: string, userIds: string[]): Statement =>
  keyed(
    'user_id',
    `INSERT INTO dsync_group_members (directory_id, group_id, user_id)
      VALUES ${[...new Set(userIds)]
        .sort()
        .map((id) => `(${lit.uuid(directoryId)}, ${lit.text(groupId)}, ${lit.text(id)})`)
        .join(', ')}
      ON CONFLICT DO NOTHING
      RETURNING user_id`,
  );

/**
 * Removes one member of the group (all three key columns given, so that its plan is the primary key
 * whatever the group's size); returns the user id when it was a member.
 */
export const removeMember = (directoryId: string, groupId: string, userId: string): Statement =>
  keyed(
    'user_id',
    `DELETE FROM dsync_group_members
      WHERE directory_id = ${lit.uuid(directoryId)} AND group_id = ${lit.text(groupId)} AND user_id = ${lit.text(userId)}
      RETURNING user_id`,
  );

/** Removes every member of the group; returns their user ids. */
export const removeAllMembers = (directoryId: string, groupId: string): Statement =>
  keyed(
    'user_id',
    `DELETE FROM dsync_group_members WHERE directory_id = ${lit.uuid(directoryId)} AND group_id = ${lit.text(groupId)}
      RETURNING user_id`,
  );
