/**
 * The writes of a Google sync. Each reads what it compares inside the transaction the caller opened
 * (it holds the directory row lock: run.ts commit) and returns the change to apply in it (a planner,
 * change/plan.ts; run.ts applies it in the same transaction). They produce exactly Jackson's events:
 * `user.created`/`user.updated` for new and changed users, `user.deleted`, the same for groups,
 * `group.user_added`/`group.user_removed` for membership changes. Nothing is written, and no event
 * produced, for an unchanged object.
 */
import { addMembers as addMembersOf, removeMembers as removeMembersOf } from '../../change/members.ts';
import type { ChangePlan, Planner } from '../../change/plan.ts';
import * as groups from '../../store/groups.ts';
import * as steps from '../../store/steps.ts';
import * as users from '../../store/users.ts';
import type { Executor } from '../../tables.ts';
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

/** In id order (as a bulk delete returned them). */
const inIdOrder = <T extends { id: string }>(items: T[]) =>
  [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

const names = (u: Pick<DsyncUser, 'userName' | 'email'>) => [
  ...new Set([u.userName, u.email].filter((n): n is string => !!n).map((n) => n.toLowerCase())),
];

/**
 * What writing a page of users takes: the updates in page order, then one insert of the new users
 * (their events in page order). A user whose userName or email another user holds (a rename still
 * to come in this run, a swap) is deferred, not failed; the holders in `released` hold nothing (a
 * rename cycle frees their names first).
 */
async function userPlan(
  trx: Executor,
  directoryId: string,
  page: DsyncUser[],
  released: ReadonlySet<string> = new Set(),
): Promise<{ out: UserWrites; plan: (c: ChangePlan) => void }> {
  const stored = byId(await users.findUsers(trx, directoryId, ids(page)));
  const changed = page.filter((u) => {
    const c = stored.get(u.id);
    return !c || userFingerprint(c.raw) !== userFingerprint(u.raw);
  });
  const out: UserWrites = { created: 0, updated: 0, deferred: [] };
  if (!changed.length) return { out, plan: () => {} };
  const holders = new Map<string, Set<string>>();
  for (const h of await users.findUsersByNames(trx, directoryId, changed.flatMap(names)))
    if (!released.has(h.id)) for (const n of names(h)) holders.set(n, (holders.get(n) ?? new Set()).add(h.id));
  const taken = new Set<string>();
  const written: Array<{ user: DsyncUser; update: boolean }> = [];
  for (const u of changed) {
    const wanted = names(u);
    if (wanted.some((n) => taken.has(n) || [...(holders.get(n) ?? [])].some((id) => id !== u.id))) {
      out.deferred.push(u);
      continue;
    }
    for (const n of wanted) taken.add(n);
    written.push({ user: u, update: stored.has(u.id) });
    if (stored.has(u.id)) out.updated++;
    else out.created++;
  }
  return {
    out,
    plan: (c) => {
      for (const w of written) {
        if (w.update) c.write(steps.updateUser(w.user));
        c.event(w.update ? 'user.updated' : 'user.created', { user: w.user });
      }
      const inserts = written.filter((w) => !w.update).map((w) => w.user);
      if (inserts.length) c.write(steps.insertUsers(directoryId, inserts));
    },
  };
}

/** Creates the new users and updates the changed ones, in the given order (see userPlan). */
export async function writeUsers(trx: Executor, directoryId: string, page: DsyncUser[]): Promise<Planner<UserWrites>> {
  const { out, plan } = await userPlan(trx, directoryId, page);
  return (c) => {
    plan(c);
    return out;
  };
}

/**
 * The last resort for deferred users: a rename cycle (two users swapping emails) cannot be applied
 * one user at a time, so the names of every deferred user are released first, then the users are
 * written. Users that still clash (a name held outside the cycle) get their old names back.
 */
export async function writeUserCycle(
  trx: Executor,
  directoryId: string,
  pending: DsyncUser[],
): Promise<Planner<UserWrites>> {
  const before = await users.findUsers(trx, directoryId, ids(pending));
  const { out, plan } = await userPlan(trx, directoryId, pending, new Set(ids(before)));
  const wanted = new Map(pending.map((u) => [u.id, u]));
  const notWritten = new Set(out.deferred.map((u) => u.id));
  return (c) => {
    if (before.length) c.write(steps.clearUserNames(directoryId, ids(before)));
    plan(c);
    for (const o of before) {
      const w = wanted.get(o.id);
      if (notWritten.has(o.id) || (w && userFingerprint(w.raw) === userFingerprint(o.raw)))
        c.write(steps.updateUser(o));
    }
    return out;
  };
}

/** Deletes these users (and their memberships): `user.deleted` each, in id order. */
export async function deleteUsers(trx: Executor, directoryId: string, gone: string[]): Promise<Planner<number>> {
  const found = inIdOrder(await users.findUsers(trx, directoryId, gone));
  return (c) => {
    if (!found.length) return 0;
    const w = c.write(steps.deleteUsers(directoryId, ids(found)));
    for (const user of found) c.event('user.deleted', { user }, { ...w, key: user.id });
    return found.length;
  };
}

/** Creates the new groups and updates the changed ones (group names need not be unique at Google). */
export async function writeGroups(
  trx: Executor,
  directoryId: string,
  page: DsyncGroup[],
): Promise<Planner<{ created: number; updated: number }>> {
  const stored = byId(await groups.findGroups(trx, directoryId, ids(page)));
  const out = { created: 0, updated: 0 };
  const written: Array<{ group: DsyncGroup; update: boolean }> = [];
  for (const g of page) {
    const c = stored.get(g.id);
    if (!c) {
      written.push({ group: g, update: false });
      out.created++;
    } else if (groupFingerprint(c.raw) !== groupFingerprint(g.raw)) {
      written.push({ group: g, update: true });
      out.updated++;
    }
  }
  return (c) => {
    for (const w of written) {
      if (w.update) c.write(steps.updateGroup(w.group));
      c.event(w.update ? 'group.updated' : 'group.created', { group: w.group });
    }
    const inserts = written.filter((w) => !w.update).map((w) => w.group);
    if (inserts.length) c.write(steps.insertGroups(directoryId, inserts));
    return out;
  };
}

/** Deletes these groups (their memberships go with them): `group.deleted` each, in id order. */
export async function deleteGroups(trx: Executor, directoryId: string, gone: string[]): Promise<Planner<number>> {
  const found = inIdOrder(await groups.findGroups(trx, directoryId, gone));
  return (c) => {
    if (!found.length) return 0;
    const w = c.write(steps.deleteGroups(directoryId, ids(found)));
    for (const group of found) c.event('group.deleted', { group }, { ...w, key: group.id });
    return found.length;
  };
}

/** Removes these members from the group: `group.user_removed` per removed membership of a user. */
export async function removeMembers(
  trx: Executor,
  directoryId: string,
  groupId: string,
  gone: string[],
): Promise<Planner<void>> {
  const group = await groups.findGroup(trx, directoryId, groupId);
  const stored = group ? byId(await users.findUsers(trx, directoryId, gone)) : new Map<string, DsyncUser>();
  return (c) => {
    if (group) removeMembersOf(c, group, gone, stored);
  };
}

/**
 * Adds these users to the group: `group.user_added` per new membership. Ids that are not users of
 * the directory (a user outside the Workspace, one that could not be stored) are ignored.
 */
export async function addMembers(
  trx: Executor,
  directoryId: string,
  groupId: string,
  wanted: string[],
): Promise<Planner<void>> {
  const group = await groups.findGroup(trx, directoryId, groupId);
  const stored = group ? byId(await users.findUsers(trx, directoryId, wanted)) : new Map<string, DsyncUser>();
  return (c) => {
    if (group)
      addMembersOf(
        c,
        group,
        wanted.filter((id) => stored.has(id)),
        stored,
      );
  };
}
