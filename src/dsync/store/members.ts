/**
 * dsync_group_members: which users belong to which group. A membership may name a user id that is
 * not (yet) a user of the directory (a group pushed before its users); it is kept, listed, and
 * resolved when the user appears (see change/members.ts createUser). Deleting a user deletes its memberships.
 */
import type { Executor } from '../../core/db/tx.ts';

/** Inserts the memberships that do not exist yet; returns the user ids actually added, in input order. */
export async function addMembers(db: Executor, directoryId: string, groupId: string, userIds: string[]) {
  if (!userIds.length) return [];
  const rows = await db
    .insertInto('dsync_group_members')
    // In one order, so that writes adding the same members at once wait for each other, never in a cycle.
    .values([...userIds].sort().map((user_id) => ({ directory_id: directoryId, group_id: groupId, user_id })))
    .onConflict((oc) => oc.doNothing())
    .returning('user_id')
    .execute();
  const added = new Set(rows.map((r) => r.user_id));
  return userIds.filter((id) => added.has(id));
}

/** Deletes the given memberships (all of the group's when `userIds` is undefined); returns the ids removed. */
export async function removeMembers(
  db: Executor,
  directoryId: string,
  groupId: string,
  userIds?: string[],
): Promise<string[]> {
  if (userIds && !userIds.length) return [];
  let q = db.deleteFrom('dsync_group_members').where('directory_id', '=', directoryId).where('group_id', '=', groupId);
  if (userIds) q = q.where('user_id', 'in', userIds);
  const rows = await q.returning('user_id').execute();
  const removed = new Set(rows.map((r) => r.user_id));
  return userIds ? userIds.filter((id) => removed.has(id)) : rows.map((r) => r.user_id).sort();
}

/** Member user ids of a group, oldest membership first. */
export async function listMemberIds(
  db: Executor,
  directoryId: string,
  groupId: string,
  page?: { offset: number; limit: number },
): Promise<string[]> {
  let q = db
    .selectFrom('dsync_group_members')
    .select('user_id')
    .where('directory_id', '=', directoryId)
    .where('group_id', '=', groupId)
    .orderBy('created_at')
    .orderBy('user_id');
  if (page) q = q.offset(page.offset).limit(page.limit);
  return (await q.execute()).map((r) => r.user_id);
}
