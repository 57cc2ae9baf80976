/** dsync_users: SCIM users, keyed by (directory_id, id). Reads; writes are statements of a planned change (steps.ts). */
import type { Selectable } from 'kysely';
import type { Predicate } from '../scim/filter.ts';
import type { DsyncUsersTable, Executor } from '../tables.ts';
import type { DsyncUser, Raw } from '../types.ts';
import { listingTotal, scopeSql, type UserScope } from './scope.ts';

type UserRow = Selectable<DsyncUsersTable>;

const toUser = (r: UserRow): DsyncUser => ({
  directoryId: r.directory_id,
  id: r.id,
  userName: r.user_name,
  externalId: r.external_id,
  email: r.email,
  firstName: r.first_name,
  lastName: r.last_name,
  active: r.active,
  roles: Array.isArray(r.roles) ? r.roles : undefined,
  raw: r.raw as Raw,
});

/** A user of the directory (a read: writes read through their plan, store/steps.ts). */
export async function findUser(db: Executor, directoryId: string, id: string): Promise<DsyncUser | undefined> {
  const r = await db
    .selectFrom('dsync_users')
    .selectAll()
    .where('directory_id', '=', directoryId)
    .where('id', '=', id)
    .executeTakeFirst();
  return r && toUser(r);
}

/**
 * The lock names of these resource names (empty ones skipped): a change locks them (core/db/locks.ts:
 * advisory locks on PostgreSQL, lock rows on CockroachDB, in one sorted order) until its transaction
 * ends, so that the check for a taken name and the insert cannot race with another create of the
 * same name (case-insensitive).
 */
export const nameLocks = (directoryId: string, kind: string, names: string[]): string[] =>
  names.filter(Boolean).map((n) => `${directoryId}:${kind}:${n.toLowerCase()}`);

const scoped = (db: Executor, scope: UserScope, filter?: Predicate) =>
  db.selectFrom('dsync_users as u').where(scopeSql('u', scope, filter));

/**
 * One page of the rows of the scope, newest first (and the true total, not capped at the page size,
 * with `withTotal`), as `select` reads them.
 */
async function pageUsers<R>(
  db: Executor,
  scope: UserScope,
  opts: { filter?: Predicate | undefined; offset: number; limit: number; withTotal?: boolean },
  select: (rows: ReturnType<typeof pageOfUsers>) => Promise<R[]>,
): Promise<{ rows: R[]; total: number }> {
  const rows = await select(pageOfUsers(db, scope, opts));
  return { rows, total: await listingTotal(db, 'u', scope, opts, rows.length) };
}

const pageOfUsers = (
  db: Executor,
  scope: UserScope,
  opts: { filter?: Predicate | undefined; offset: number; limit: number },
) => {
  // The page's keys first, then its rows: without a filter the keys come from an index-only scan
  // of (dsync_users_created_idx), so a deep page (startIndex 99,001 of 100,000) reads the index up to it
  // and 100 rows, not every row before it (about a quarter of the buffers, and no plan that sorts
  // the whole directory).
  const page = scoped(db, scope, opts.filter)
    .select(['u.directory_id', 'u.id'])
    .orderBy('u.created_at', 'desc')
    .orderBy('u.id', 'desc')
    .offset(opts.offset)
    .limit(opts.limit);
  return db
    .selectFrom('dsync_users as u')
    .innerJoin(page.as('p'), (j) => j.onRef('p.directory_id', '=', 'u.directory_id').onRef('p.id', '=', 'u.id'))
    .orderBy('u.created_at', 'desc')
    .orderBy('u.id', 'desc');
};

/** One page, newest first, and the true total (not capped at the page size). */
export async function listUsers(
  db: Executor,
  scope: UserScope,
  opts: { filter?: Predicate | undefined; offset: number; limit: number; withTotal?: boolean },
): Promise<{ users: DsyncUser[]; total: number }> {
  const { rows, total } = await pageUsers(db, scope, opts, (q) => q.selectAll('u').execute());
  return { users: rows.map(toUser), total };
}

/**
 * The same page as listUsers, its rows' `raw` only: a SCIM list answers nothing else, and the other
 * columns (two dates, names, the enterprise copies, roles) were read and parsed for nothing, which
 * a page of 100 users at 20 concurrent requests made a good part of what the process allocates.
 */
export async function listUserResources(
  db: Executor,
  scope: UserScope,
  opts: { filter?: Predicate | undefined; offset: number; limit: number; withTotal?: boolean },
): Promise<{ resources: Raw[]; total: number }> {
  const { rows, total } = await pageUsers(db, scope, opts, (q) => q.select('u.raw').execute());
  return { resources: rows.map((r) => r.raw as Raw), total };
}

/** The users of the directory with these ids (any order). */
export async function findUsers(db: Executor, directoryId: string, ids: string[]): Promise<DsyncUser[]> {
  if (!ids.length) return [];
  const rows = await db
    .selectFrom('dsync_users')
    .selectAll()
    .where('directory_id', '=', directoryId)
    .where('id', 'in', ids)
    .execute();
  return rows.map(toUser);
}

/** Users of the directory whose userName or email is one of `names` (compared lower-cased). */
export async function findUsersByNames(
  db: Executor,
  directoryId: string,
  names: string[],
): Promise<Array<{ id: string; userName: string | null; email: string | null }>> {
  const lower = [...new Set(names.map((n) => n.toLowerCase()))];
  if (!lower.length) return [];
  const rows = await db
    .selectFrom('dsync_users')
    .select(['id', 'user_name', 'email'])
    .where('directory_id', '=', directoryId)
    .where((eb) => eb.or([eb(eb.fn('lower', ['user_name']), 'in', lower), eb(eb.fn('lower', ['email']), 'in', lower)]))
    .execute();
  return rows.map((r) => ({ id: r.id, userName: r.user_name, email: r.email }));
}

/** User ids of the directory after `afterId`, in id order (keyset pages). */
export async function listUserIds(db: Executor, directoryId: string, afterId: string, limit: number) {
  const rows = await db
    .selectFrom('dsync_users')
    .select('id')
    .where('directory_id', '=', directoryId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
