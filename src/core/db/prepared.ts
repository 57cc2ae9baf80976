/**
 * Named prepared statements for the statements of the hot paths that are marked for it.
 *
 * Every other statement goes to PostgreSQL as an unnamed statement of the extended query protocol:
 * parsed and planned again on every run. For the big data-modifying statements of the
 * authorization-code flow that was 60% of their time in PostgreSQL (measured with
 * `log_min_duration_statement = 0`, which times Parse, Bind — where an unnamed statement is planned —
 * and Execute apart; docs/performance.md, "Authorization-code flow"). A statement whose text starts
 * with `PREPARED` (`sql\`${PREPARED}with …\``) is sent as a named statement instead, on connections
 * where that is safe: PostgreSQL parses it once per session, and after five runs with custom plans
 * may keep a generic one (https://www.postgresql.org/docs/current/sql-prepare.html#SQL-PREPARE-NOTES).
 *
 * What a statement must be to be marked:
 * - its plan must not depend on the size of the data (primary-key and unique-key reads, inserts):
 *   a generic plan is then the same plan;
 * - its result columns must be named, never `select *`: a prepared `*` fails with "cached plan must
 *   not change result type" once a migration adds a column while the process runs;
 * - one text per shape: the values go in parameters, so a marked statement has a few texts at most
 *   (one per combination of its optional parts), which bounds what each session keeps.
 *
 * Where it is safe: a connection that talks to its PostgreSQL session directly. Through a
 * transaction pooler (PgBouncer's `pool_mode = transaction`) one connection's statements run on
 * whichever server session is free, where the prepared statement may not exist; a connection is
 * recognised as direct when the process id PostgreSQL announced at start-up is its
 * `pg_backend_pid()` (pooler.ts, `directSession`). Until that answer is in, and on every other
 * connection, marked statements go unnamed as before. CockroachDB is left as it was.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type pg from 'pg';
import { directSession } from './pooler.ts';

const MARK = '/* prepared */ ';

/** The mark a statement's text starts with (`sql\`${PREPARED}select …\``) to be prepared where it can be. */
export const PREPARED = sql.raw(MARK);

/** Statement names by text: the marked texts are few (see above), so the map stays small. */
const names = new Map<string, string>();
const nameOf = (text: string): string => {
  let n = names.get(text);
  if (n === undefined) {
    n = `gh_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    names.set(text, n);
  }
  return n;
};

type Query = (...args: unknown[]) => unknown;

/**
 * Makes each new connection of `pool` send marked statements as named ones once it is known to be
 * a direct session (the check is one query at connect time, queued before any other).
 */
export function prepareMarkedStatements(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    let direct = false;
    directSession(client).then(
      (d) => {
        direct = d;
      },
      () => {}, // a connection that fails here fails its next query too, where it is reported
    );
    const query = client.query as unknown as Query;
    (client as unknown as { query: Query }).query = function named(this: pg.Client, ...args: unknown[]) {
      const [text, values] = args;
      if (direct && typeof text === 'string' && text.startsWith(MARK) && typeof args[2] !== 'function') {
        return query.call(this, { name: nameOf(text), text, values: Array.isArray(values) ? values : [] });
      }
      return query.apply(this, args);
    };
  });
}
