/** The rows a read covers: one directory and/or the directories of a tenant+product, and a SCIM filter. */
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Predicate } from '../scim/filter.ts';
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
