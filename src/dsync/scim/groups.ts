/**
 * SCIM `/Groups` semantics (Jackson DirectoryGroups; RFC 7644 §3), scoped to one
 * directory. Differences from Jackson, on purpose: members sent with POST and PUT are stored, ops
 * are case-insensitive and `replace`/`remove` of `members` are honoured, and re-adding a
 * member makes no event. A member that is not (yet) a user is kept (see addMembers).
 * Responses keep Jackson's shape, `members: []` included.
 */
import { randomUUID } from 'node:crypto';
import { filter as compile, parse } from 'scim2-parse-filter';
import type { Executor } from '../../core/db/tx.ts';
import { addMembers as addMembersOf, removeMembers as removeMembersOf } from '../change/members.ts';
import type { Planner } from '../change/plan.ts';
import { scimError } from '../errors.ts';
import type { EventBatch } from '../events/service.ts';
import * as groups from '../store/groups.ts';
import * as members from '../store/members.ts';
import * as steps from '../store/steps.ts';
import { findUsers, lockNames } from '../store/users.ts';
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

/**
 * Loads a group of the directory or throws Jackson's 404. A write locks the row: `update` (it reads
 * and writes the group, or the whole member list) until the transaction ends, or `members` — shared
 * with other such writes — for a write that adds and removes listed members only (see membersOnly).
 */
export async function loadGroup(
  db: Executor,
  directory: Directory,
  id: string,
  lock: 'update' | 'members' | undefined = undefined,
): Promise<DsyncGroup> {
  const g = await groups.findGroup(db, directory.id, id, {
    forUpdate: lock === 'update',
    forShare: lock === 'members',
  });
  if (!g) throw scimError(404, 'Group not found');
  return g;
}

/**
 * Adds the members: `group.user_added` per new membership. A member that is not (yet) a user of
 * the directory is kept too (Jackson keeps it), with an event carrying what is known (`{id, group}`);
 * when that user is created, `group.user_added` follows with the user's data (change/members.ts createUser).
 */
async function addMembers(trx: Executor, group: DsyncGroup, ids: string[], batch: EventBatch) {
  const known = await findUsers(trx, group.directoryId, ids);
  const byId = new Map(known.map((u) => [u.id, u]));
  const added = await members.addMembers(trx, group.directoryId, group.id, ids);
  for (const id of added) {
    const user = byId.get(id);
    batch.add('group.user_added', user ? { user, group } : { userId: id, group });
  }
}

async function removeMembers(trx: Executor, group: DsyncGroup, ids: string[] | undefined, batch: EventBatch) {
  const removed = await members.removeMembers(trx, group.directoryId, group.id, ids);
  const byId = new Map((await findUsers(trx, group.directoryId, removed)).map((u) => [u.id, u]));
  for (const id of removed) {
    const user = byId.get(id);
    if (user) batch.add('group.user_removed', { user, group });
  }
}

/** Makes the group's members exactly `ids`. */
async function setMembers(trx: Executor, group: DsyncGroup, ids: string[], batch: EventBatch) {
  const current = await members.listMemberIds(trx, group.directoryId, group.id);
  const wanted = new Set(ids);
  await removeMembers(
    trx,
    group,
    current.filter((id) => !wanted.has(id)),
    batch,
  );
  await addMembers(trx, group, ids, batch);
}

export async function createGroup(trx: Executor, directory: Directory, body: unknown, batch: EventBatch) {
  const b = resourceBody(body);
  const name = displayName(b.displayName);
  const id = str(b.groupId) || randomUUID();
  await lockNames(trx, directory.id, 'group', [name ?? '', str(b.groupId) ?? '']);
  if ((await groups.findGroupByName(trx, directory.id, name)) || (await groups.findGroup(trx, directory.id, id)))
    throw scimError(409, 'Group already exists', 'uniqueness');
  const raw: Raw = isObject(b.rawAttributes) ? { ...b.rawAttributes } : { ...b, members: [] };
  delete raw.groupId;
  raw.id = id;
  const group: DsyncGroup = { directoryId: directory.id, id, name, externalId: str(raw.externalId), raw };
  await groups.insertGroup(trx, group);
  batch.add('group.created', { group });
  if (Array.isArray(b.members)) await addMembers(trx, group, memberIds(b.members), batch);
  return { status: 201, data: view(group) };
}

/** PUT /Groups/{id}: renames, merges the body into raw and, when `members` is sent, sets the members. */
export async function replaceGroup(trx: Executor, current: DsyncGroup, body: unknown, batch: EventBatch) {
  const b = resourceBody(body);
  const name = displayName(b.displayName);
  const raw: Raw = isObject(b.rawAttributes) ? { ...b.rawAttributes } : { ...current.raw, ...b, members: [] };
  raw.id = current.id;
  const group: DsyncGroup = { ...current, name, externalId: str(raw.externalId), raw };
  await groups.updateGroup(trx, group);
  batch.add('group.updated', { group });
  if (Array.isArray(b.members)) await setMembers(trx, group, memberIds(b.members), batch);
  return { status: 200, data: view(group) };
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
async function filteredMembers(trx: Executor, group: DsyncGroup, inner: string): Promise<string[]> {
  const ast = memberFilter(inner);
  const direct = listedIds(ast);
  if (direct) return direct;
  const test = compile(ast);
  return (await members.listMemberIds(trx, group.directoryId, group.id)).filter((id) => test({ value: id }));
}

async function applyOp(trx: Executor, group: DsyncGroup, o: PatchOp, batch: EventBatch): Promise<DsyncGroup> {
  const path = o.path?.toLowerCase();
  if (path === 'members') {
    if (o.op === 'add') await addMembers(trx, group, memberIds(o.value), batch);
    else if (o.op === 'replace') await setMembers(trx, group, memberIds(o.value), batch);
    else await removeMembers(trx, group, o.value === undefined ? undefined : memberIds(o.value), batch);
    return group;
  }
  const bracket = o.path && /^members\[(.*)\]$/i.exec(o.path);
  if (bracket) {
    if (o.op === 'remove')
      await removeMembers(trx, group, await filteredMembers(trx, group, bracket[1] as string), batch);
    return group;
  }
  if (path === undefined) {
    if (!isObject(o.value))
      throw scimError(400, 'An operation without "path" needs an object "value".', 'invalidValue');
    let g = group;
    for (const [key, value] of Object.entries(o.value)) {
      if (key === 'id' || key === 'schemas') continue;
      g = await applyOp(trx, g, { op: o.op, path: checkPath(key), value }, batch);
    }
    return g;
  }
  if (path === 'displayname' && o.op !== 'remove') {
    const name = displayName(o.value);
    const renamed: DsyncGroup = { ...group, name, raw: { ...group.raw, displayName: name } };
    await groups.updateGroup(trx, renamed);
    batch.add('group.updated', { group: renamed });
    return renamed;
  }
  if (path === 'displayname' || path === 'id')
    throw scimError(400, `"${o.path}" cannot be removed or changed.`, 'mutability');
  const raw = applyPatch(group.raw, [o]);
  raw.id = group.id;
  const changed: DsyncGroup = { ...group, externalId: str(raw.externalId), raw };
  await groups.updateGroup(trx, changed);
  batch.add('group.updated', { group: changed });
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
 * A members-only PATCH (membersOnly) as the member changes it makes, in order: `ids` as applyOp
 * takes them (request order, deduplicated). Undefined when the body is anything else, and when
 * reading it fails (the statement path then answers, with its errors in its order: 404 before 400).
 */
export function memberChanges(body: unknown): Array<{ op: 'add' | 'remove'; ids: string[] }> | undefined {
  if (!membersOnly(body)) return undefined;
  try {
    const changes: Array<{ op: 'add' | 'remove'; ids: string[] }> = [];
    for (const o of patchOperations(body)) {
      if (o.op === 'replace') return undefined;
      if (o.path?.toLowerCase() === 'members') {
        changes.push({ op: o.op, ids: memberIds(o.value) });
        continue;
      }
      const bracket = o.path && /^members\[(.*)\]$/i.exec(o.path);
      const ids = bracket && o.op === 'remove' ? listedIds(memberFilter(bracket[1] as string)) : undefined;
      if (!ids) return undefined;
      changes.push({ op: 'remove', ids });
    }
    return changes;
  } catch {
    return undefined;
  }
}

/**
 * A members-only PATCH (memberChanges) of group `id`: 200 with the group, or 404. The group row is
 * locked FOR SHARE (see membersOnly); each change in order: the users it names read first, then
 * the memberships inserted (`group.user_added` per membership added) or deleted
 * (`group.user_removed` per membership removed whose member is a user).
 */
export function patchMembers(
  directory: Directory,
  id: string,
  changes: Array<{ op: 'add' | 'remove'; ids: string[] }>,
): Planner<{ status: number; data: unknown }> {
  return (c) => {
    const group = c.read(steps.group(directory.id, id, 'share'));
    if (!group) throw scimError(404, 'Group not found');
    for (const change of changes) {
      const known = c.read(steps.users(directory.id, change.ids));
      if (change.op === 'add') addMembersOf(c, group, change.ids, known);
      else removeMembersOf(c, group, change.ids, known);
    }
    return { status: 200, data: view(group) };
  };
}

/** PATCH /Groups/{id}: each operation in order; 200 with the group as it ends up. */
export async function patchGroup(trx: Executor, current: DsyncGroup, body: unknown, batch: EventBatch) {
  let group = current;
  for (const o of patchOperations(body)) group = await applyOp(trx, group, o, batch);
  return { status: 200, data: view(group) };
}

/** DELETE /Groups/{id}: 200 `{}`; memberships go with the group, without `user_removed` events. */
export async function deleteGroup(trx: Executor, current: DsyncGroup, batch: EventBatch) {
  await groups.deleteGroup(trx, current.directoryId, current.id);
  batch.add('group.deleted', { group: current });
  return { status: 200, data: {} };
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
