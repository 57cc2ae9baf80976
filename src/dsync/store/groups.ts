/** dsync_groups: SCIM groups, keyed by (directory_id, id). Reads; writes are statements of a planned change (steps.ts). */
import type { Selectable } from 'kysely';
import type { Predicate } from '../scim/filter.ts';
import type { DsyncGroupsTable, Executor } from '../tables.ts';
import type { DsyncGroup, Raw } from '../types.ts';
import { listingTotal, scopeSql, type UserScope } from './scope.ts';

type GroupRow = Selectable<DsyncGroupsTable>;

const toGroup = (r: GroupRow): DsyncGroup => ({
  directoryId: r.directory_id,
  id: r.id,
  name: r.name,
  externalId: r.external_id,
  raw: r.raw as Raw,
});

/** A group of the directory (a read: writes read through their plan, store/steps.ts). */
export async function findGroup(db: Executor, directoryId: string, id: string): Promise<DsyncGroup | undefined> {
  const r = await db
    .selectFrom('dsync_groups')
    .selectAll()
    .where('directory_id', '=', directoryId)
    .where('id', '=', id)
    .executeTakeFirst();
  return r && toGroup(r);
}

const scoped = (db: Executor, scope: UserScope, filter?: Predicate) =>
  db.selectFrom('dsync_groups as g').where(scopeSql('g', scope, filter));

export async function listGroups(
  db: Executor,
  scope: UserScope,
  opts: { filter?: Predicate | undefined; offset: number; limit: number; withTotal?: boolean },
): Promise<{ groups: DsyncGroup[]; total: number }> {
  // The page's keys first, then its rows: without a filter the keys come from an index-only scan
  // of (dsync_groups_created_idx), so a deep page (startIndex 99,001 of 100,000) reads the index up to it
  // and 100 rows, not every row before it (about a quarter of the buffers, and no plan that sorts
  // the whole directory).
  const page = scoped(db, scope, opts.filter)
    .select(['g.directory_id', 'g.id'])
    .orderBy('g.created_at', 'desc')
    .orderBy('g.id', 'desc')
    .offset(opts.offset)
    .limit(opts.limit);
  const rows = await db
    .selectFrom('dsync_groups as g')
    .innerJoin(page.as('p'), (j) => j.onRef('p.directory_id', '=', 'g.directory_id').onRef('p.id', '=', 'g.id'))
    .selectAll('g')
    .orderBy('g.created_at', 'desc')
    .orderBy('g.id', 'desc')
    .execute();
  return { groups: rows.map(toGroup), total: await listingTotal(db, 'g', scope, opts, rows.length) };
}

/** The groups of the directory with these ids (any order). */
export async function findGroups(db: Executor, directoryId: string, ids: string[]): Promise<DsyncGroup[]> {
  if (!ids.length) return [];
  const rows = await db
    .selectFrom('dsync_groups')
    .selectAll()
    .where('directory_id', '=', directoryId)
    .where('id', 'in', ids)
    .execute();
  return rows.map(toGroup);
}

/** Group ids of the directory after `afterId`, in id order (keyset pages). */
export async function listGroupIds(db: Executor, directoryId: string, afterId: string, limit: number) {
  const rows = await db
    .selectFrom('dsync_groups')
    .select('id')
    .where('directory_id', '=', directoryId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
