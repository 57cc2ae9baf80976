/**
 * The statements a planned directory change is made of (src/dsync/change/plan.ts): reads that
 * return one json value as text, and writes that return the keys they touched as a json array
 * (text; `plain` writes return nothing). The same statement runs inside gatehouse_dsync_apply on
 * PostgreSQL and as a statement of its own on CockroachDB (change/apply.ts), in one of two forms:
 *
 * - its values written in as literals (`lit`): planned at every run with the values as constants,
 *   so that a plan that depends on the size of the directory is made for the directory as it is
 *   (the name checks, the member lists; see sql/0260_dsync_write_functions_plans.sql);
 * - with arguments (`args`, `$1`… in its text): prepared once per database session and run again
 *   with its kept plan (sql/0360_dsync_apply_prepared.sql). Only statements whose plan cannot
 *   depend on the size of a directory come in this form: the row version checks (a TID scan) and
 *   inserts.
 *
 * A read's text is compared with the text the plan expects: the same row always reads as the same
 * text (the columns' stored json kept as it is), so a plan made from an earlier read is applied
 * only if what it read is still there. On PostgreSQL the reads of rows a write may read again
 * (`versioned`) also give the rows' versions, and the next plan made on them checks only the
 * versions (see Versioned).
 */
import { engineOf } from '../../core/db/engine.ts';
import { ENTERPRISE_FIELDS, enterpriseOf } from '../enterprise.ts';
import type { Executor } from '../tables.ts';
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

/**
 * PostgreSQL's form of a read of rows: the read that gives the rows' versions with the rows
 * (`v<versions>|<json>`, see versionOf), and the check that only reads the versions again, given
 * those a plan was made on (undefined when they cannot be checked so: a row that was not there).
 */
export interface Versioned {
  stmt: Statement;
  check: (version: string) => Statement | undefined;
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
  /** PostgreSQL: the form of the read that gives versions (the plan's engine decides, see ChangePlan). */
  versioned?: Versioned;
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

/** A value sent as an argument: refused as a literal of it would be (NUL, lone surrogates). */
function arg(s: string): string {
  if (s.includes('\u0000') || !s.isWellFormed())
    throw new UnstorableValue('a value contains a character that cannot be stored');
  return s;
}

/** text[] input, as the argument of a `$n::text[]`. */
const arrayArg = (vs: readonly string[]) =>
  `{${vs.map((v) => `"${arg(v).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;

/** Literals of the values a statement carries (a round-trip test reads them back from PostgreSQL). */
export const lit = {
  text: (v: string | null | undefined) => (v === null || v === undefined ? 'NULL' : `${quote(v)}::text`),
  uuid: (v: string) => `${quote(v)}::uuid`,
  bool: (v: boolean) => (v ? 'true' : 'false'),
  int: (v: number) => String(Math.trunc(v)),
  /** json, its text as JSON.stringify writes it (NULL for undefined). */
  json: (v: unknown) => (v === undefined ? 'NULL' : `${quote(JSON.stringify(v))}::json`),
  /** text[], a constant array (its size and values known to the planner). */
  texts: (vs: readonly string[]) => `${quote(arrayArg(vs))}::text[]`,
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

// ---- row versions (PostgreSQL) ----------------------------------------------------------------

/**
 * A row's version: its `xmin` (the transaction that wrote this version of it) and its `ctid` (where
 * the version is stored), https://www.postgresql.org/docs/current/ddl-system-columns.html. Every
 * write of a row stores a new version at a new ctid — even a second write by the same transaction,
 * whose xmin is the same — and a ctid is taken by another version only after the one there is gone,
 * so the pair names one version of one row. A version that reads the same is the same row as read.
 */
const rowVersion = (alias: string) => `${alias}.xmin::text || ',' || ${alias}.ctid::text`;

/**
 * Whether plans applied on `db` read rows with their versions (Versioned): on PostgreSQL only, as
 * CockroachDB rows have no xmin or ctid (there the rows are read whole and compared).
 */
export const readsVersions = (db: Executor): boolean => engineOf(db) === 'postgres';

/** The versions part of a versioned read's text (`v…`, up to the `|`), or undefined for any other text. */
export function versionOf(text: string): string | undefined {
  return text.startsWith('v') ? text.slice(0, text.indexOf('|')) : undefined;
}

/** The json of a read's text, its versions left out. */
export const factJson = (text: string): unknown =>
  JSON.parse(text.startsWith('v') ? text.slice(text.indexOf('|') + 1) : text);

/** The ctids of a versions text (`v<xmin>,<ctid>;…`), or undefined when a row was not there (`-`). */
function ctids(version: string): string[] | undefined {
  const rows = version.slice(1).split(';');
  if (!version.slice(1) || rows.some((r) => !r.includes(','))) return undefined;
  return rows.map((r) => r.slice(r.indexOf(',') + 1));
}

/**
 * The check of one row's version (see Versioned): the row at that ctid if it is still the row of
 * the key (a TID scan, whatever the size of the table and its statistics), with `lock`.
 */
const rowCheck =
  (table: string, directoryId: string, id: string, lock: 'update' | 'share' | undefined) =>
  (version: string): Statement | undefined => {
    const tid = ctids(version);
    if (tid?.length !== 1) return undefined;
    return {
      sql: `SELECT 'v' || ${rowVersion('r')} FROM ${table} r
        WHERE r.ctid = $3::tid AND r.directory_id = $1::uuid AND r.id = $2::text${lockClause(lock)}`,
      args: [directoryId, arg(id), tid[0] as string],
    };
  };

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

/**
 * One row of a directory's table by id, as its JSON fact (`json`, over alias `a`), or undefined;
 * `lock` locks it until the transaction ends. Kept, and versioned by the row's ctid and xmin.
 */
const rowById = <T>(
  o: { kind: string; table: string; alias: string; json: string; decode: (fact: unknown) => T },
  directoryId: string,
  id: string,
  lock: 'update' | 'share' | undefined,
): Read<T | undefined> => {
  const { table, alias: a, json } = o;
  const where = `WHERE ${a}.directory_id = ${lit.uuid(directoryId)} AND ${a}.id = ${lit.text(id)}${lockClause(lock)}`;
  return {
    key: `${o.kind}:${directoryId}:${id}`,
    stmt: { sql: `SELECT ${json}::text FROM ${table} ${a} ${where}` },
    decode: (v) => (v ? o.decode(v) : undefined),
    locks: lock !== undefined,
    kept: true,
    versioned: {
      stmt: { sql: `SELECT 'v' || ${rowVersion(a)} || '|' || ${json}::text FROM ${table} ${a} ${where}` },
      check: rowCheck(table, directoryId, id, lock),
    },
  };
};

/** A user of the directory, or undefined; `lock` locks its row until the transaction ends. */
export const user = (directoryId: string, id: string, lock?: 'update'): Read<DsyncUser | undefined> =>
  rowById(
    {
      kind: 'user',
      table: 'dsync_users',
      alias: 'u',
      json: USER_JSON,
      decode: (f) => toUser(directoryId, f as UserFact),
    },
    directoryId,
    id,
    lock,
  );

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
export const users = (directoryId: string, ids: string[]): Read<Map<string, DsyncUser>> => {
  const json = `coalesce(json_agg(CASE WHEN u.id IS NULL THEN NULL ELSE ${USER_JSON} END ORDER BY a.n), '[]'::json)::text`;
  const from = `FROM unnest(${lit.texts(ids)}) WITH ORDINALITY AS a(id, n)
      LEFT JOIN dsync_users u ON u.directory_id = ${lit.uuid(directoryId)} AND u.id = a.id`;
  return {
    key: `users:${directoryId}:${ids.join('\u0001')}`,
    stmt: { sql: `SELECT ${json} ${from}` },
    decode: (v) =>
      new Map(
        ((v as Array<UserFact | null>) ?? []).flatMap((f) => (f ? [[f.id, toUser(directoryId, f)] as const] : [])),
      ),
    kept: true,
    versioned: {
      // Each id's version in order, `-` for an id that is not a user.
      stmt: {
        sql: `SELECT 'v' || coalesce(string_agg(coalesce(${rowVersion('u')}, '-'), ';' ORDER BY a.n), '') || '|' || ${json} ${from}`,
      },
      check: (version) => {
        const tids = ctids(version);
        if (tids?.length !== ids.length) return undefined;
        // One TID scan per id (a subquery per row: the plan cannot become a join over the directory).
        return {
          sql: `SELECT 'v' || string_agg(coalesce((SELECT ${rowVersion('u')} FROM dsync_users u
              WHERE u.ctid = a.tid AND u.directory_id = $1::uuid AND u.id = a.id), '-'), ';' ORDER BY a.n)
            FROM unnest($2::text[], $3::tid[]) WITH ORDINALITY AS a(id, tid, n)`,
          args: [directoryId, arrayArg(ids), arrayArg(tids)],
        };
      },
    },
  };
};

/** A group of the directory, or undefined; `lock` locks its row (`share`: shared with other such writes). */
export const group = (directoryId: string, id: string, lock?: 'update' | 'share'): Read<DsyncGroup | undefined> =>
  rowById(
    {
      kind: 'group',
      table: 'dsync_groups',
      alias: 'g',
      json: GROUP_JSON,
      decode: (f) => toGroup(directoryId, f as GroupFact),
    },
    directoryId,
    id,
    lock,
  );

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
export const addMembers = (directoryId: string, groupId: string, userIds: string[]): Statement => ({
  ...keyed(
    'user_id',
    `INSERT INTO dsync_group_members (directory_id, group_id, user_id)
      SELECT $1::uuid, $2::text, a.id FROM unnest($3::text[]) WITH ORDINALITY AS a(id, n) ORDER BY a.n
      ON CONFLICT DO NOTHING
      RETURNING user_id`,
  ),
  args: [directoryId, arg(groupId), arrayArg([...new Set(userIds)].sort())],
});

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
