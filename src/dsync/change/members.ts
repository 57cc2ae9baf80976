/**
 * Users created and memberships changed, in one place for every writer (SCIM, the controller's
 * writes, a Google sync): the rows written and the events each makes (payload.ts), planned into a
 * change (plan.ts).
 */

import * as steps from '../store/steps.ts';
import { nameLocks } from '../store/users.ts';
import type { DsyncGroup, DsyncUser } from '../types.ts';
import type { ChangePlan, Planner } from './plan.ts';

/** Inserts the users (one statement), `user.created` each. */
export function insertUsers(c: ChangePlan, users: DsyncUser[]): void {
  if (!users.length) return;
  c.write(steps.insertUsers(c.directory.id, users));
  for (const user of users) c.event('user.created', { user });
}

/**
 * Creates one user (SCIM POST /Users, the controller's users.create): refused with `exists()` when
 * its userName or email is taken (case-insensitive), or its id when `checkId`. The names (and the
 * id) are locked first, so that no other create of the same name runs between the check and the
 * insert. Memberships that named the user before it existed are then complete: `group.user_added`
 * each, after `user.created`.
 */
export function createUser(user: DsyncUser, o: { checkId: boolean; exists: () => Error }): Planner<DsyncUser> {
  const d = user.directoryId;
  const names = [user.userName, user.email].filter((v): v is string => !!v);
  const id = o.checkId ? user.id : undefined;
  return (c) => {
    c.lock(nameLocks(d, 'user', [user.userName ?? '', user.email ?? '', id ?? '']));
    const found = c.read(steps.createCheck(d, names, user.id, id), '[]');
    if (found.taken) throw o.exists();
    const listing = found.listing.length ? c.read(steps.groups(d, found.listing), '[]') : [];
    insertUsers(c, [user]);
    for (const group of listing) c.event('group.user_added', { user, group });
    return user;
  };
}

/**
 * Adds these members to the group where they are not members yet (one statement):
 * `group.user_added` per membership added, with the user's data when it is a user of the directory
 * (`known`), else what is known (`{id, group}`: a member that is not a user yet is kept, as Jackson
 * keeps it; its `group.user_added` with the user's data follows when the user is created).
 */
export function addMembers(c: ChangePlan, group: DsyncGroup, ids: string[], known: Map<string, DsyncUser>): void {
  if (!ids.length) return;
  const added = c.write(steps.addMembers(group.directoryId, group.id, ids));
  for (const id of ids) {
    const user = known.get(id);
    c.event('group.user_added', user ? { user, group } : { userId: id, group }, { ...added, key: id });
  }
}

/**
 * Removes these members from the group, one statement each in one order (so that writes removing
 * the same members wait for each other, never in a cycle): `group.user_removed` per membership
 * removed whose member is a user of the directory (`known`), in the order of `ids`.
 */
export function removeMembers(c: ChangePlan, group: DsyncGroup, ids: string[], known: Map<string, DsyncUser>): void {
  const writes = new Map<string, ReturnType<ChangePlan['write']>>();
  for (const id of [...new Set(ids)].sort())
    writes.set(id, c.write(steps.removeMember(group.directoryId, group.id, id)));
  for (const id of ids) {
    const user = known.get(id);
    if (user) c.event('group.user_removed', { user, group }, { ...(writes.get(id) as { write: number }), key: id });
  }
}
