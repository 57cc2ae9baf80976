/**
 * SCIM `/Groups` semantics (Jackson DirectoryGroups; RFC 7644 §3), scoped to one
 * directory. Differences from Jackson, on purpose: members sent with POST and PUT are stored, ops
 * are case-insensitive and `replace`/`remove` of `members` are honoured, and re-adding a
 * member makes no event. A member that is not (yet) a user is kept (see addMembers).
 * Responses keep Jackson's shape, `members: []` included. Each write is a planner (change/plan.ts).
 */
import { randomUUID } from 'node:crypto';
import { filter as compile, parse } from 'scim2-parse-filter';
import { addMembers as addMembersOf, removeMembers as removeMembersOf } from '../change/members.ts';
import type { ChangePlan, Planner } from '../change/plan.ts';
import { scimError } from '../errors.ts';
import * as groups from '../store/groups.ts';
import * as steps from '../store/steps.ts';
import { nameLocks } from '../store/users.ts';
import type { Executor } from '../tables.ts';
import type { Directory, DsyncGroup, Raw } from '../types.ts';
import { isObject, resourceBody } from './attributes.ts';
import { applyPatch, checkPath, type PatchOp, patchOperations } from './patch.ts';
import { LIST_RESPONSE, type ListQuery } from './users.ts';

export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

export const view = (g: Pick<DsyncGroup, 'id' | 'name'>) => ({
  schemas: [GROUP_SCHEMA],
  id: g.id,
  displayName: g.name,
  members: [],
});
const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);

function displayName(v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '')
    throw scimError(400, 'The attribute "displayName" is required.', 'invalidValue');
  return v;
}

/** `[{value, display?}]` or a single `{value}` → user ids (deduplicated, in order). */
function memberIds(v: unknown): string[] {
  const items = Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
  const ids = items.map((m) => (isObject(m) ? str(m.value) : null));
  if (ids.some((id) => id === null || id === ''))
    throw scimError(400, 'Each member needs a "value" with the user id.', 'invalidValue');
  return [...new Set(ids as string[])];
}

/** Loads a group of the directory or throws Jackson's 404. */
export async function loadGroup(db: Executor, directory: Directory, id: string): Promise<DsyncGroup> {
  const g = await groups.findGroup(db, directory.id, id);
  if (!g) throw notFound();
  return g;
}

/** What a SCIM write answers. */
type Answer = { status: number; data: unknown };

const notFound = () => scimError(404, 'Group not found');

/**
 * The members of a group as the change planned so far leaves them: the stored list (read when
 * first needed; reads run before the change's writes, so it is the list before the change) with
 * the change's additions and removals followed through. Oldest membership first: the stored ones,
 * then those the change adds (their rows share the transaction's time), by id.
 */
class Members {
  private readonly ops: Array<{ add: boolean; ids: string[] | undefined }> = [];
  private readonly c: ChangePlan;
  private readonly group: DsyncGroup;
  constructor(c: ChangePlan, group: DsyncGroup) {
    this.c = c;
    this.group = group;
  }

  current(): string[] {
    const stored = [...this.c.read(steps.memberIds(this.group.directoryId, this.group.id), '[]')];
    const kept = new Set(stored);
    const added = new Set<string>();
    for (const op of this.ops) {
      for (const id of op.ids ?? [...kept, ...added]) {
        if (op.add) {
          if (!kept.has(id)) added.add(id);
        } else {
          kept.delete(id);
          added.delete(id);
        }
      }
    }
    return [...stored.filter((id) => kept.has(id)), ...[...added].sort()];
  }

  add(ids: string[]): void {
    this.ops.push({ add: true, ids });
  }

  /** undefined: every member. */
  remove(ids: string[] | undefined): void {
    this.ops.push({ add: false, ids });
  }
}

/**
 * Adds the members: `group.user_added` per new membership. A member that is not (yet) a user of
 * the directory is kept too (Jackson keeps it), with an event carrying what is known (`{id, group}`);
 * when that user is created, `group.user_added` follows with the user's data (change/members.ts).
 */
function addMembers(c: ChangePlan, group: DsyncGroup, ids: string[], m: Members): void {
  if (!ids.length) return;
  addMembersOf(c, group, ids, c.read(steps.users(group.directoryId, ids)));
  m.add(ids);
}

/** Removes these members (every member when `ids` is undefined): `group.user_removed` per removed user. */
function removeMembers(c: ChangePlan, group: DsyncGroup, ids: string[] | undefined, m: Members): void {
  if (ids === undefined) {
    const all = [...m.current()].sort();
    const known = c.read(steps.users(group.directoryId, all));
    const gone = c.write(steps.removeAllMembers(group.directoryId, group.id));
    for (const id of all) {
      const user = known.get(id);
      if (user) c.event('group.user_removed', { user, group }, { ...gone, key: id });
    }
  } else if (ids.length) removeMembersOf(c, group, ids, c.read(steps.users(group.directoryId, ids)));
  m.remove(ids);
}

/** Makes the group's members exactly `ids`. */
function setMembers(c: ChangePlan, group: DsyncGroup, ids: string[], m: Members): void {
  const wanted = new Set(ids);
  removeMembers(
    c,
    group,
    m.current().filter((id) => !wanted.has(id)),
    m,
  );
  addMembers(c, group, ids, m);
}

/** POST /Groups: 201, or 409 when the displayName (case-insensitive) or the requested id is taken; members stored. */
export function createGroup(directory: Directory, body: unknown): Planner<Answer> {
  const b = resourceBody(body);
  const name = displayName(b.displayName);
  const requested = str(b.groupId) || undefined;
  const id = requested ?? randomUUID();
  return (c) => {
    c.lock(nameLocks(directory.id, 'group', [name, requested ?? '']));
    if (c.read(steps.groupTaken(directory.id, name, id), 'false'))
      throw scimError(409, 'Group already exists', 'uniqueness');
    const raw: Raw = isObject(b.rawAttributes) ? { ...b.rawAttributes } : { ...b, members: [] };
    delete raw.groupId;
    raw.id = id;
    const group: DsyncGroup = { directoryId: directory.id, id, name, externalId: str(raw.externalId), raw };
    c.write(steps.insertGroups(directory.id, [group]));
    c.event('group.created', { group });
    if (Array.isArray(b.members)) addMembers(c, group, memberIds(b.members), new Members(c, group));
    return { status: 201, data: view(group) };
  };
}

/** PUT /Groups/{id}: renames, merges the body into raw and, when `members` is sent, sets the members. */
export function replaceGroup(directory: Directory, id: string, body: unknown): Planner<Answer> {
  return (c) => {
    const current = c.read(steps.group(directory.id, id, 'update'));
    if (!current) throw notFound();
    const b = resourceBody(body);
    const name = displayName(b.displayName);
    const raw: Raw = isObject(b.rawAttributes) ? { ...b.rawAttributes } : { ...current.raw, ...b, members: [] };
    raw.id = current.id;
    const group: DsyncGroup = { ...current, name, externalId: str(raw.externalId), raw };
    c.write(steps.updateGroup(group));
    c.event('group.updated', { group });
    if (Array.isArray(b.members)) setMembers(c, group, memberIds(b.members), new Members(c, group));
    return { status: 200, data: view(group) };
  };
}

function memberFilter(inner: string): ReturnType<typeof parse> {
  try {
    return parse(inner);
  } catch {
    throw scimError(400, `Invalid member filter "${inner.slice(0, 200)}".`, 'invalidPath');
  }
}

/** The ids a `members[<filter>]` made of `value eq` disjunctions names; undefined for any other filter. */
function listedIds(ast: ReturnType<typeof parse>): string[] | undefined {
  const direct: string[] = [];
  const walk = (f: typeof ast): boolean =>
    f.op === 'or'
      ? f.filters.every(walk)
      : f.op === 'eq' && f.attrPath.toLowerCase() === 'value' && direct.push(String(f.compValue)) > 0;
  return walk(ast) ? direct : undefined;
}

/** Ids selected by `members[<filter>]`: `value eq` disjunctions directly, anything else against the members. */
function filteredMembers(inner: string, m: Members): string[] {
  const ast = memberFilter(inner);
  const direct = listedIds(ast);
  if (direct) return direct;
  const test = compile(ast);
  return m.current().filter((id) => test({ value: id }));
}

function applyOp(c: ChangePlan, group: DsyncGroup, o: PatchOp, m: Members): DsyncGroup {
  const path = o.path?.toLowerCase();
  if (path === 'members') {
    if (o.op === 'add') addMembers(c, group, memberIds(o.value), m);
    else if (o.op === 'replace') setMembers(c, group, memberIds(o.value), m);
    else removeMembers(c, group, o.value === undefined ? undefined : memberIds(o.value), m);
    return group;
  }
  const bracket = o.path && /^members\[(.*)\]$/i.exec(o.path);
  if (bracket) {
    if (o.op === 'remove') removeMembers(c, group, filteredMembers(bracket[1] as string, m), m);
    return group;
  }
  if (path === undefined) {
    if (!isObject(o.value))
      throw scimError(400, 'An operation without "path" needs an object "value".', 'invalidValue');
    let g = group;
    for (const [key, value] of Object.entries(o.value)) {
      if (key === 'id' || key === 'schemas') continue;
      g = applyOp(c, g, { op: o.op, path: checkPath(key), value }, m);
    }
    return g;
  }
  if (path === 'displayname' && o.op !== 'remove') {
    const name = displayName(o.value);
    const renamed: DsyncGroup = { ...group, name, raw: { ...group.raw, displayName: name } };
    c.write(steps.updateGroup(renamed));
    c.event('group.updated', { group: renamed });
    return renamed;
  }
  if (path === 'displayname' || path === 'id')
    throw scimError(400, `"${o.path}" cannot be removed or changed.`, 'mutability');
  const raw = applyPatch(group.raw, [o]);
  raw.id = group.id;
  const changed: DsyncGroup = { ...group, externalId: str(raw.externalId), raw };
  c.write(steps.updateGroup(changed));
  c.event('group.updated', { group: changed });
  return changed;
}

/** `members[value eq "…"]`, or several such joined by `or` (Okta's removal): listed members only. */
const LISTED_MEMBERS = /^members\[\s*value\s+eq\s+"[^"\\]*"(\s+or\s+value\s+eq\s+"[^"\\]*")*\s*\]$/i;

/**
 * Whether a PATCH only adds and removes listed members (`path: "members"`, `add`, or `remove` with
 * a `value`, or `remove` with a `members[value eq "…"]` path): it neither reads nor writes the group
 * row nor the member list as a whole, so PATCHes of one group may run side by side — each member
 * row is its own (its insert or delete waits for a concurrent one of the same member, and the events
 * follow commit order). The group row is locked FOR SHARE: such PATCHes share it, while a write that
 * locks it FOR UPDATE (rename, replace, delete) waits for them and they for it; the same on
 * CockroachDB. Malformed bodies say false (the PATCH then fails as before, under the full lock).
 */
export function membersOnly(body: unknown): boolean {
  if (!isObject(body) || !Array.isArray(body.Operations) || !body.Operations.length) return false;
  return body.Operations.every((raw) => {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') return false;
    const op = raw.op.trim().toLowerCase();
    const path = raw.path.trim();
    if (op === 'remove' && LISTED_MEMBERS.test(path)) return true;
    return path.toLowerCase() === 'members' && (op === 'add' || op === 'remove') && raw.value !== undefined;
  });
}

/**
 * PATCH /Groups/{id}: each operation in order; 200 with the group as it ends up, or 404. The group
 * row is locked FOR SHARE when the PATCH only adds and removes listed members (membersOnly), FOR
 * UPDATE otherwise.
 */
export function patchGroup(directory: Directory, id: string, body: unknown): Planner<Answer> {
  const lock = membersOnly(body) ? 'share' : 'update';
  return (c) => {
    const current = c.read(steps.group(directory.id, id, lock));
    if (!current) throw notFound();
    const m = new Members(c, current);
    let group = current;
    for (const o of patchOperations(body)) group = applyOp(c, group, o, m);
    return { status: 200, data: view(group) };
  };
}

/** DELETE /Groups/{id}: 200 `{}`; memberships go with the group, without `user_removed` events. */
export function deleteGroup(directory: Directory, id: string): Planner<Answer> {
  return (c) => {
    const current = c.read(steps.group(directory.id, id, 'update'));
    if (!current) throw notFound();
    c.write(steps.deleteGroups(directory.id, [current.id]));
    c.event('group.deleted', { group: current });
    return { status: 200, data: {} };
  };
}

export const getGroup = (g: DsyncGroup) => ({ status: 200, data: view(g) });

/** GET /Groups: paged with true totals (Jackson returned up to 50, unpaged), Jackson's key order. */
export async function listGroups(db: Executor, directory: Directory, q: ListQuery) {
  const { groups: page, total } = await groups.listGroups(
    db,
    { directoryId: directory.id },
    { filter: q.filter, offset: q.startIndex - 1, limit: q.count, withTotal: true },
  );
  return {
    status: 200,
    data: {
      schemas: [LIST_RESPONSE],
      totalResults: total,
      itemsPerPage: page.length,
      startIndex: q.startIndex,
      Resources: page.map((g) => g.raw),
    },
  };
}
