/** The rows a read covers: one directory and/or the directories of a tenant+product, and a SCIM filter. */
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Predicate } from '../scim/filter.ts';
import type { Executor } from '../tables.ts';
import { predicateSql } from './filter-sql.ts';

export interface UserScope {
  directoryId?: string | undefined;
  /** tenant+product of the directory (management API) */
  tenant?: string | undefined;
  product?: string | undefined;
}

/** The condition on the rows of alias `u` (users) or `g` (groups). */
export function scopeSql(alias: 'u' | 'g', scope: UserScope, filter?: Predicate): RawBuilder<SqlBool> {
  const directoryId = sql.ref(`${alias}.directory_id`);
  const conds: RawBuilder<SqlBool>[] = [];
  if (scope.directoryId !== undefined) conds.push(sql<SqlBool>`${directoryId} = ${scope.directoryId}`);
  if (scope.tenant !== undefined || scope.product !== undefined)
    conds.push(
      sql<SqlBool>`${directoryId} in (select id from dsync_directories where tenant = ${scope.tenant ?? ''} and product = ${scope.product ?? ''})`,
    );
  if (filter) conds.push(predicateSql(filter, { alias }));
  if (!conds.length) return sql<SqlBool>`true`;
  return sql<SqlBool>`${sql.join(
    conds.map((c) => sql`(${c})`),
    sql` and `,
  )}`;
}

/**
 * A listing's total: with `withTotal`, every row of the scope (users `u` or groups `g`), not capped
 * at the page; otherwise the page's own length.
 */
export async function listingTotal(
  db: Executor,
  alias: 'u' | 'g',
  scope: UserScope,
  opts: { filter?: Predicate | undefined; withTotal?: boolean | undefined },
  pageLength: number,
): Promise<number> {
  if (!opts.withTotal) return pageLength;
  const table = sql.table(alias === 'u' ? 'dsync_users' : 'dsync_groups');
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${table} as ${sql.raw(alias)}
    where ${scopeSql(alias, scope, opts.filter)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}
