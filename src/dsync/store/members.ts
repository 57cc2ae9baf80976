import type { Executor } from '../tables.ts';
/**
 * dsync_group_members: which users belong to which group. A membership may name a user id that is
 * not (yet) a user of the directory (a group pushed before its users); it is kept, listed, and
 * resolved when the user appears (see change/members.ts createUser). Deleting a user deletes its memberships.
 */

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
