/** dsync_groups: SCIM groups, keyed by (directory_id, id). */
import { type Selectable, sql } from 'kysely';
import type { DsyncGroupsTable } from '../../core/db/schema.ts';
import type { Executor } from '../../core/db/tx.ts';
import type { Predicate } from '../scim/filter.ts';
import type { DsyncGroup, Raw } from '../types.ts';
import { scopeSql, type UserScope } from './scope.ts';

type GroupRow = Selectable<DsyncGroupsTable>;

const toGroup = (r: GroupRow): DsyncGroup => ({
  directoryId: r.directory_id,
  id: r.id,
  name: r.name,
  externalId: r.external_id,
  raw: r.raw as Raw,
});

const columns = (g: DsyncGroup) => ({ name: g.name, external_id: g.externalId, raw: JSON.stringify(g.raw) });

const newRow = (g: DsyncGroup) => ({ directory_id: g.directoryId, id: g.id, ...columns(g) });

export async function updateGroup(db: Executor, g: DsyncGroup): Promise<void> {
  await db
    .updateTable('dsync_groups')
    .set({ ...columns(g), updated_at: sql`now()` })
    .where('directory_id', '=', g.directoryId)
    .where('id', '=', g.id)
    .execute();
}

/** A group of the directory; `forUpdate` locks its row until the transaction ends (a write's read). */
export async function findGroup(
  db: Executor,
  directoryId: string,
  id: string,
  opts: { forUpdate?: boolean; forShare?: boolean } = {},
): Promise<DsyncGroup | undefined> {
  let q = db.selectFrom('dsync_groups').selectAll().where('directory_id', '=', directoryId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  else if (opts.forShare) q = q.forShare();
  const r = await q.executeTakeFirst();
  return r && toGroup(r);
}

const scoped = (db: Executor, scope: UserScope, filter?: Predicate) =>
  db.selectFrom('dsync_groups as g').where(scopeSql('g', scope, filter));

export async function listGroups(
  db: Executor,
  scope: UserScope,
  opts: { filter?: Predicate | undefined; offset: number; limit: number; withTotal?: boolean },
): Promise<{ groups: DsyncGroup[]; total: number }> {
  const rows = await scoped(db, scope, opts.filter)
    .selectAll('g')
    .orderBy('g.created_at', 'desc')
    .orderBy('g.id', 'desc')
    .offset(opts.offset)
    .limit(opts.limit)
    .execute();
  let total = rows.length;
  if (opts.withTotal) {
    const c = await scoped(db, scope, opts.filter)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    total = Number(c.n);
  }
  return { groups: rows.map(toGroup), total };
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

/** Inserts several groups in one statement (cloud sync pages). */
export async function insertGroups(db: Executor, groups: DsyncGroup[]): Promise<void> {
  if (!groups.length) return;
  await db.insertInto('dsync_groups').values(groups.map(newRow)).execute();
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

/** Deletes these groups (their memberships go by foreign key); returns them as they were, in id order. */
export async function deleteGroups(db: Executor, directoryId: string, ids: string[]): Promise<DsyncGroup[]> {
  if (!ids.length) return [];
  const rows = await db
    .deleteFrom('dsync_groups')
    .where('directory_id', '=', directoryId)
    .where('id', 'in', ids)
    .returningAll()
    .execute();
  return rows.map(toGroup).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
