/**
 * graphile-worker needs a real PostgreSQL session: LISTEN/NOTIFY for new jobs, session advisory
 * locks (gatehouse's worker liveness), and named prepared statements. A transaction-pooling
 * connection pooler breaks all three without an error at connect time, so a worker refuses such a
 * DSN (detected as in src/core/db/pooler.ts); `queue.direct_dsn` names the direct connection
 * workers use then.
 */
import type pg from 'pg';
import { createDatabase } from '../db/client.ts';
import { DsnError, type ParsedDsn, parseDsn } from '../db/dsn.ts';
import { behindTransactionPooler } from '../db/pooler.ts';
import type { Logger } from '../log.ts';
import { prepareQueueDatabase } from './relay.ts';

export class PoolerError extends Error {
  override name = 'PoolerError';
}

/** Refuses a worker connection that goes through a transaction pooler, saying why and what to set. */
export async function assertDirectConnection(
  url: string,
  setting: 'dsn' | 'queue.dsn' | 'queue.direct_dsn',
): Promise<void> {
  if (!(await behindTransactionPooler(url))) return;
  throw new PoolerError(
    `worker refused: ${setting} reaches PostgreSQL through a transaction-pooling connection pooler (such as PgBouncer in transaction mode): two open connections were served by the same server session. graphile-worker needs a session of its own (LISTEN/NOTIFY for new jobs, session advisory locks for worker liveness, prepared statements), which such a pooler breaks. Keep dsn on the pooler for web processes and set queue.direct_dsn (QUEUE_DIRECT_DSN) to a direct PostgreSQL connection for workers.`,
  );
}

/**
 * The pool graphile-worker runs on: `queue.direct_dsn` when set (a pool of its own), else
 * `queue.dsn` when set (a pool of its own), else the container's pool; in every case checked not
 * to be a transaction pooler first. `url` is the direct connection (the job relay's, with a
 * separate queue database); `separate` says whether the queue lives outside the data database (its
 * tables are created then: see relay.ts).
 */
export async function openQueuePool(c: {
  config: { queue: { direct_dsn: string; dsn: string }; db: { pool: { max: number } } };
  dsn: ParsedDsn;
  pool: pg.Pool;
  log: Logger;
}): Promise<{ pool: pg.Pool; url: string; separate: boolean; close(): Promise<void> }> {
  const direct = c.config.queue.direct_dsn.trim();
  const queueDsn = c.config.queue.dsn.trim();
  const separate = queueDsn !== '';
  if (!direct && !separate) {
    if (c.dsn.kind !== 'memory') await assertDirectConnection(c.dsn.url, 'dsn');
    return { pool: c.pool, url: c.dsn.url, separate, close: async () => {} };
  }
  const setting = direct ? 'queue.direct_dsn' : 'queue.dsn';
  const parsed = parseDsn(direct || queueDsn);
  if (parsed.kind !== 'postgres')
    throw new DsnError(`${setting}: expected a postgres:// DSN (graphile-worker runs only on PostgreSQL)`);
  await assertDirectConnection(parsed.url, setting);
  const h = createDatabase(parsed.url, { max: c.config.db.pool.max, log: c.log, applicationName: 'gatehouse-worker' });
  if (separate) {
    try {
      await prepareQueueDatabase(h.pool);
    } catch (e) {
      await h.destroy();
      throw e;
    }
  }
  return { pool: h.pool, url: parsed.url, separate, close: () => h.destroy() };
}
