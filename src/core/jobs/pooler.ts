/**
 * graphile-worker needs a real PostgreSQL session: LISTEN/NOTIFY for new jobs, session advisory
 * locks (gatehouse's worker liveness), and named prepared statements. A transaction-pooling
 * connection pooler (PgBouncer's `pool_mode = transaction`, and statement pooling) hands each
 * transaction to whichever server session is free, which breaks all three without an error at
 * connect time. The probe: two connections checked out at the same time, each asks for its server
 * session's process id. Directly on PostgreSQL (or through a session pooler) two open connections
 * are always two sessions; through a transaction pooler the second connection is served by the
 * session the first one just released (PgBouncer reuses the most recently used server connection).
 * Equal ids prove a transaction pooler; different ids prove nothing, so the check never refuses a
 * direct connection. `queue.direct_dsn` names the direct connection workers must use then.
 */
import pg from 'pg';
import { createDatabase } from '../db/client.ts';
import { DsnError, type ParsedDsn, parseDsn } from '../db/dsn.ts';
import type { Logger } from '../log.ts';

export class PoolerError extends Error {
  override name = 'PoolerError';
}

async function open(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'gatehouse-pooler-probe' });
  c.on('error', () => {});
  await c.connect();
  return c;
}

const pid = async (c: pg.Client) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;

/** True when `url` reaches PostgreSQL through a transaction (or statement) pooler. */
export async function behindTransactionPooler(url: string, rounds = 3): Promise<boolean> {
  const a = await open(url);
  try {
    const b = await open(url);
    try {
      for (let i = 0; i < rounds; i++) {
        const pa = await pid(a);
        if (pa !== undefined && pa === (await pid(b))) return true;
      }
      return false;
    } finally {
      await b.end().catch(() => {});
    }
  } finally {
    await a.end().catch(() => {});
  }
}

/** Refuses a worker connection that goes through a transaction pooler, saying why and what to set. */
export async function assertDirectConnection(url: string, setting: 'dsn' | 'queue.direct_dsn'): Promise<void> {
  if (!(await behindTransactionPooler(url))) return;
  throw new PoolerError(
    `worker refused: ${setting} reaches PostgreSQL through a transaction-pooling connection pooler (such as PgBouncer in transaction mode): two open connections were served by the same server session. graphile-worker needs a session of its own (LISTEN/NOTIFY for new jobs, session advisory locks for worker liveness, prepared statements), which such a pooler breaks. Keep dsn on the pooler for web processes and set queue.direct_dsn (QUEUE_DIRECT_DSN) to a direct PostgreSQL connection for workers.`,
  );
}

/**
 * The pool graphile-worker runs on: `queue.direct_dsn` when set (a pool of its own), else the
 * container's pool; either way checked not to be a transaction pooler first.
 */
export async function openQueuePool(c: {
  config: { queue: { direct_dsn: string }; db: { pool: { max: number } } };
  dsn: ParsedDsn;
  pool: pg.Pool;
  log: Logger;
}): Promise<{ pool: pg.Pool; close(): Promise<void> }> {
  const direct = c.config.queue.direct_dsn.trim();
  if (!direct) {
    if (c.dsn.kind !== 'memory') await assertDirectConnection(c.dsn.url, 'dsn');
    return { pool: c.pool, close: async () => {} };
  }
  const parsed = parseDsn(direct);
  if (parsed.kind !== 'postgres')
    throw new DsnError('queue.direct_dsn: expected a postgres:// DSN (graphile-worker runs only on PostgreSQL)');
  await assertDirectConnection(parsed.url, 'queue.direct_dsn');
  const h = createDatabase(parsed.url, { max: c.config.db.pool.max, log: c.log, applicationName: 'gatehouse-worker' });
  return { pool: h.pool, close: () => h.destroy() };
}
