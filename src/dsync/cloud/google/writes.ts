/**
 * The writes of a Google sync, each inside a transaction the caller opened (it holds the directory
 * row lock and persists the batch's events at the end). They produce exactly Jackson's events: `user.created`/`user.updated` for new and changed users, `user.deleted`,
 * the same for groups, `group.user_added`/`group.user_removed` for membership changes. Nothing is
 * written, and no event produced, for an unchanged object.
 */
import type { Executor } from '../../../core/db/tx.ts';
import type { EventBatch } from '../../events/service.ts';
import * as groups from '../../store/groups.ts';
import * as members from '../../store/members.ts';
import * as users from '../../store/users.ts';
import type { DsyncGroup, DsyncUser } from '../../types.ts';
import { groupFingerprint, userFingerprint } from './mapping.ts';

export interface UserWrites {
  created: number;
  updated: number;
  /** Users whose primary email is held by another stored user: tried again later in the run. */
  deferred: DsyncUser[];
}

const ids = (items: Array<{ id: string }>) => items.map((x) => x.id);

/** The items by id. */
const byId = <T extends { id: string }>(items: T[]) => new Map(items.map((x) => [x.id, x]));

const names = (u: Pick<DsyncUser, 'userName' | 'email'>) => [
  ...new Set([u.userName, u.email].filter((n): n is string => !!n).map((n) => n.toLowerCase())),
];

/**
 * Creates the new users and updates the changed ones, in the given order. A user whose userName or
 * email another user holds (a rename still to come in this run, a swap) is deferred, not failed.
 */
export async function writeUsers(
  trx: Executor,
  directoryId: string,
  batch: EventBatch,
  page: DsyncUser[],
): Promise<UserWrites> {
  const stored = byId(await users.findUsers(trx, directoryId, ids(page)));
  const changed = page.filter((u) => {
    const c = stored.get(u.id);
    return !c || userFingerprint(c.raw) !== userFingerprint(u.raw);
  });
  const out: UserWrites = { created: 0, updated: 0, deferred: [] };
  if (!changed.length) return out;
  const holders = new Map<string, Set<string>>();
  for (const h of await users.findUsersByNames(trx, directoryId, changed.flatMap(names)))
    for (const n of names(h)) holders.set(n, (holders.get(n) ?? new Set()).add(h.id));
  const taken = new Set<string>();
  const inserts: DsyncUser[] = [];
  for (const u of changed) {
    const wanted = names(u);
    if (wanted.some((n) => taken.has(n) || [...(holders.get(n) ?? [])].some((id) => id !== u.id))) {
      out.deferred.push(u);
      continue;
    }
    for (const n of wanted) taken.add(n);
    if (stored.has(u.id)) {
      await users.updateUser(trx, u);
      batch.add('user.updated', { user: u });
      out.updated++;
    } else {
      inserts.push(u);
      batch.add('user.created', { user: u });
      out.created++;
    }
  }
  await users.insertUsers(trx, inserts);
  return out;
}

/**
 * The last resort for deferred users: a rename cycle (two users swapping emails) cannot be applied
 * one user at a time, so the names of every deferred user are released first, then the users are
 * written. Users that still clash (a name held outside the cycle) get their old names back.
 */
export async function writeUserCycle(
  trx: Executor,
  directoryId: string,
  batch: EventBatch,
  pending: DsyncUser[],
): Promise<UserWrites> {
  const before = await users.findUsers(trx, directoryId, ids(pending));
  await users.clearUserNames(trx, directoryId, ids(before));
  const r = await writeUsers(trx, directoryId, batch, pending);
  const wanted = new Map(pending.map((u) => [u.id, u]));
  const notWritten = new Set(r.deferred.map((u) => u.id));
  for (const o of before) {
    const w = wanted.get(o.id);
    if (notWritten.has(o.id) || (w && userFingerprint(w.raw) === userFingerprint(o.raw)))
      await users.updateUser(trx, o);
  }
  return r;
}

export async function deleteUsers(trx: Executor, directoryId: string, batch: EventBatch, ids: string[]) {
  const removed = await users.deleteUsers(trx, directoryId, ids);
  for (const user of removed) batch.add('user.deleted', { user });
  return removed.length;
}

/** Creates the new groups and updates the changed ones (group names need not be unique at Google). */
export async function writeGroups(trx: Executor, directoryId: string, batch: EventBatch, page: DsyncGroup[]) {
  const stored = byId(await groups.findGroups(trx, directoryId, ids(page)));
  const out = { created: 0, updated: 0 };
  const inserts: DsyncGroup[] = [];
  for (const g of page) {
    const c = stored.get(g.id);
    if (!c) {
      inserts.push(g);
      batch.add('group.created', { group: g });
      out.created++;
    } else if (groupFingerprint(c.raw) !== groupFingerprint(g.raw)) {
      await groups.updateGroup(trx, g);
      batch.add('group.updated', { group: g });
      out.updated++;
    }
  }
  await groups.insertGroups(trx, inserts);
  return out;
}

export async function deleteGroups(trx: Executor, directoryId: string, batch: EventBatch, ids: string[]) {
  const removed = await groups.deleteGroups(trx, directoryId, ids);
  for (const group of removed) batch.add('group.deleted', { group });
  return removed.length;
}

/** Removes these members from the group: `group.user_removed` per removed membership. */
export async function removeMembers(
  trx: Executor,
  directoryId: string,
  batch: EventBatch,
  groupId: string,
  ids: string[],
): Promise<number> {
  const group = await groups.findGroup(trx, directoryId, groupId);
  if (!group) return 0;
  const removed = await members.removeMembers(trx, directoryId, groupId, ids);
  const stored = byId(await users.findUsers(trx, directoryId, removed));
  let n = 0;
  for (const id of removed) {
    const user = stored.get(id);
    if (user) batch.add('group.user_removed', { user, group });
    n++;
  }
  return n;
}

/**
 * Adds these users to the group: `group.user_added` per new membership. Ids that are not users of
 * the directory (a user outside the Workspace, one that could not be stored) are ignored.
 */
export async function addMembers(
  trx: Executor,
  directoryId: string,
  batch: EventBatch,
  groupId: string,
  ids: string[],
): Promise<number> {
  const group = await groups.findGroup(trx, directoryId, groupId);
  if (!group) return 0;
  const stored = byId(await users.findUsers(trx, directoryId, ids));
  const added = await members.addMembers(
    trx,
    directoryId,
    groupId,
    ids.filter((id) => stored.has(id)),
  );
  for (const id of added) batch.add('group.user_added', { user: stored.get(id)!, group });
  return added.length;
}
