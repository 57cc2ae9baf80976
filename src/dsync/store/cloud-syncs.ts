import type { Executor } from '../tables.ts';
/**
 * dsync_cloud_syncs: one row per cloud-synced directory, holding the lease of the run in progress
 * and the outcome of the last run. A lease is a deadline renewed by its owner after every page; a
 * run whose process died simply lets it expire.
 */

/**
 * Takes the lease of a directory's sync when nobody holds a live one. Returns false when another
 * run holds it (or the directory does not exist).
 */
export async function claimLease(
  db: Executor,
  directoryId: string,
  owner: string,
  now: Date,
  until: Date,
): Promise<boolean> {
  const exists = await db.selectFrom('dsync_directories').select('id').where('id', '=', directoryId).executeTakeFirst();
  if (!exists) return false;
  const r = await db
    .insertInto('dsync_cloud_syncs')
    .values({ directory_id: directoryId, lease_owner: owner, lease_until: until, status: 'running', started_at: now })
    .onConflict((oc) =>
      oc
        .column('directory_id')
        .doUpdateSet({
          lease_owner: owner,
          lease_until: until,
          status: 'running',
          started_at: now,
          finished_at: null,
          error: '',
        })
        .where((eb) =>
          eb.or([eb('dsync_cloud_syncs.lease_until', 'is', null), eb('dsync_cloud_syncs.lease_until', '<', now)]),
        ),
    )
    .returning('directory_id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Extends the lease; false when this owner no longer holds it (expired and taken, or the directory is gone). */
export async function renewLease(db: Executor, directoryId: string, owner: string, until: Date): Promise<boolean> {
  const r = await db
    .updateTable('dsync_cloud_syncs')
    .set({ lease_until: until })
    .where('directory_id', '=', directoryId)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Ends the run: drops the lease and records the outcome (only while this owner holds it). */
export async function releaseLease(
  db: Executor,
  directoryId: string,
  owner: string,
  outcome: { status: 'completed' | 'failed' | 'stopped'; finishedAt: Date; error: string; stats: object },
): Promise<void> {
  await db
    .updateTable('dsync_cloud_syncs')
    .set({
      lease_owner: null,
      lease_until: null,
      status: outcome.status,
      finished_at: outcome.finishedAt,
      error: outcome.error,
      stats: JSON.stringify(outcome.stats),
    })
    .where('directory_id', '=', directoryId)
    .where('lease_owner', '=', owner)
    .execute();
}

/**
 * Google directories that can be synced (active, with a token), after `afterId` in id order: all of
 * them with `dueBefore` undefined, else those whose last run started before it (or never ran).
 */
export async function listSyncableDirectories(
  db: Executor,
  q: { afterId?: string; limit: number; dueBefore?: Date },
): Promise<string[]> {
  let s = db
    .selectFrom('dsync_directories as d')
    .leftJoin('dsync_cloud_syncs as c', 'c.directory_id', 'd.id')
    .select('d.id')
    .where('d.type', '=', 'google')
    .where('d.deactivated', '=', false)
    .where((eb) => eb.or([eb('d.google_access_token', '<>', ''), eb('d.google_refresh_token', '<>', '')]));
  if (q.afterId) s = s.where('d.id', '>', q.afterId);
  const due = q.dueBefore;
  if (due) s = s.where((eb) => eb.or([eb('c.started_at', 'is', null), eb('c.started_at', '<=', due)]));
  const rows = await s.orderBy('d.id').limit(q.limit).execute();
  return rows.map((r) => r.id);
}
