/**
 * Startup dialect check: exactly one `SELECT version()`; the DSN scheme must
 * match the server. CockroachDB reached through postgres://, or PostgreSQL through cockroach://,
 * stops the process with a message that names the scheme to use instead.
 */
import type { DsnKind } from './dsn.ts';

export class DialectError extends Error {
  override name = 'DialectError';
}

export interface Queryable {
  query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }>;
}

export type ServerKind = 'postgres' | 'cockroach';

export function serverKindOf(version: string): ServerKind {
  return /cockroachdb/i.test(version) ? 'cockroach' : 'postgres';
}

export async function checkDialect(q: Queryable, dsnKind: DsnKind): Promise<ServerKind> {
  const { rows } = await q.query('SELECT version()');
  const version = String(rows[0]?.version ?? '');
  const server = serverKindOf(version);
  const expected: ServerKind = dsnKind === 'cockroach' ? 'cockroach' : 'postgres';
  if (server === 'cockroach' && expected === 'postgres') {
    throw new DialectError(
      'the database server is CockroachDB but the DSN uses postgres://; use a cockroach:// DSN (for example cockroach://user@host:26257/db)',
    );
  }
  if (server === 'postgres' && expected === 'cockroach') {
    throw new DialectError('the database server is PostgreSQL but the DSN uses cockroach://; use a postgres:// DSN');
  }
  return server;
}
