/** dsync_directories. Secret columns hold sealed values; the service seals and opens them. */
import type { Insertable, Selectable, Updateable } from 'kysely';
import type { DsyncDirectoriesTable, Executor } from '../tables.ts';

export type DirectoryRow = Selectable<DsyncDirectoriesTable>;
export type NewDirectoryRow = Insertable<DsyncDirectoriesTable>;
export type DirectoryPatch = Updateable<DsyncDirectoriesTable>;

export async function insertDirectory(db: Executor, row: NewDirectoryRow): Promise<DirectoryRow> {
  return db.insertInto('dsync_directories').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findDirectory(db: Executor, id: string): Promise<DirectoryRow | undefined> {
  return db.selectFrom('dsync_directories').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Locks the directory row until the transaction ends: a cloud sync holds it for its whole
 * transaction. SCIM writes do not: they take the row lock only when their events get their
 * sequence numbers, right before the commit (store/events.ts writeEvents).
 */
export async function lockDirectory(db: Executor, id: string): Promise<DirectoryRow | undefined> {
  return db.selectFrom('dsync_directories').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function updateDirectory(
  db: Executor,
  id: string,
  patch: DirectoryPatch,
): Promise<DirectoryRow | undefined> {
  return db.updateTable('dsync_directories').set(patch).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Deletes the directory; returns the deleted row (undefined when there was none). */
export async function deleteDirectory(db: Executor, id: string): Promise<DirectoryRow | undefined> {
  return db.deleteFrom('dsync_directories').where('id', '=', id).returningAll().executeTakeFirst();
}

export interface DirectoryQuery {
  tenant?: string;
  product?: string;
  type?: string;
  offset?: number;
  limit?: number;
}

/** Newest first, as Jackson's index lookups. */
export async function listDirectories(db: Executor, q: DirectoryQuery): Promise<DirectoryRow[]> {
  let s = db.selectFrom('dsync_directories').selectAll();
  if (q.tenant !== undefined) s = s.where('tenant', '=', q.tenant);
  if (q.product !== undefined) s = s.where('product', '=', q.product);
  if (q.type !== undefined) s = s.where('type', '=', q.type);
  s = s.orderBy('created_at', 'desc').orderBy('id', 'desc');
  if (q.offset) s = s.offset(q.offset);
  if (q.limit !== undefined) s = s.limit(q.limit);
  return s.execute();
}

export async function countDirectories(db: Executor): Promise<number> {
  const r = await db
    .selectFrom('dsync_directories')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
