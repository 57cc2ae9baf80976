/**
 * The job relay (`queue.dsn` set): moves the jobs that data transactions wrote to
 * `gatehouse_job_outbox` (data database) into graphile-worker (queue database).
 *
 * One relay per fleet: every worker process runs one, and the one that holds a session advisory
 * lock on the queue database relays; the others try for the lock every `queue.relay_interval`.
 * The lock lives as long as the holder's connection, so when the holder dies (SIGKILL, lost host)
 * PostgreSQL ends its session and another worker's relay takes over within one interval.
 *
 * A batch, oldest outbox row first:
 *   1. read up to `queue.relay_batch_size` rows from the outbox (data database);
 *   2. in one transaction on the queue database, on the lock's own connection: skip the rows that
 *      `gatehouse_job_relay_marks` already has, apply the others in order (add_job …), insert a
 *      mark per row, commit;
 *   3. delete the rows from the outbox (data database), then their marks (a relay that died before
 *      that leaves marks of rows that are gone: the next relay deletes them when it is elected).
 * The jobs and their marks commit together, so a relay that dies after 2 and before 3 leaves marks
 * that make the next relay skip those rows: each job is added once. Because the queue
 * transaction runs on the connection that holds the lock, a relay that lost its lock (its
 * connection ended) cannot commit a batch.
 *
 * Order: rows are relayed in outbox identity order. Transactions that serialise on a lock (the
 * writers of one directory) draw their identities in commit order, so their jobs arrive in
 * commit order; rows of an older transaction that commits later are relayed when they appear.
 */
import { hostname } from 'node:os';
import { runMigrations } from 'graphile-worker';
import pg from 'pg';
import { quietGraphileLogger } from '../db/migrate.ts';
import type { Logger } from '../log.ts';
import { applyJobs, type JobRequest, type JobSpec, type Query } from './enqueue.ts';

/** Advisory lock of the relay on the queue database (two-key form: class, 0). */
const RELAY_LOCK = 0x67_68_72_6c; // 'ghrl'

/** Tables gatehouse keeps in a separate queue database (graphile-worker migrates its own schema). */
export const QUEUE_TABLES = `
  create table if not exists gatehouse_job_relay_marks (
    outbox_id bigint primary key,
    relayed_at timestamptz not null default now()
  );
  create table if not exists worker_pools (
    id text primary key,
    hostname text not null,
    pid integer not null,
    started_at timestamptz not null default now()
  );`;

/**
 * Creates gatehouse's tables in a separate queue database when missing, under a transaction
 * advisory lock: workers starting together would otherwise race on `create table if not exists`.
 */
export async function ensureQueueTables(db: pg.Pool | pg.Client): Promise<void> {
  const client = db instanceof pg.Pool ? await db.connect() : db;
  try {
    await client.query('begin');
    try {
      await client.query('select pg_advisory_xact_lock($1::int, 1)', [RELAY_LOCK]);
      await client.query(QUEUE_TABLES);
      await client.query('commit');
    } catch (e) {
      await client.query('rollback').catch(() => {});
      throw e;
    }
  } finally {
    if (db instanceof pg.Pool) (client as pg.PoolClient).release();
  }
}

/**
 * A separate queue database made ready: graphile-worker's schema and gatehouse's tables (`migrate
 * sql`, and each worker at start). One preparer at a time (a session advisory lock on the queue
 * database): workers starting together on an empty queue database would otherwise race on the
 * schema's creation. Uses two connections of `pool`.
 */
export async function prepareQueueDatabase(pool: pg.Pool): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query('select pg_advisory_lock($1::int, 1)', [RELAY_LOCK]);
    try {
      await runMigrations({ pgPool: pool, logger: quietGraphileLogger });
      await c.query(QUEUE_TABLES);
    } finally {
      await c.query('select pg_advisory_unlock($1::int, 1)', [RELAY_LOCK]).catch(() => {});
    }
  } finally {
    c.release();
  }
}

interface OutboxRow {
  id: string;
  op: JobRequest['op'];
  task: string;
  payload: unknown;
  spec: Omit<JobSpec, 'runAt'> & { runAt?: string };
}

const clientQuery =
  (c: pg.ClientBase): Query =>
  async <R>(text: string, values: readonly unknown[]) =>
    (await c.query(text, [...values])).rows as R[];

export interface RelayHooks {
  /** Tests: called after the queue transaction committed, before the outbox rows are deleted. */
  afterQueueCommit?(ids: string[]): void | Promise<void>;
  /** Tests: called after the outbox rows were deleted, before their marks are. */
  afterOutboxDelete?(ids: string[]): void | Promise<void>;
}

/**
 * Relays one batch; returns the rows handled. `queue` must hold the relay lock (or be the only
 * relay, in tests).
 */
export async function relayBatch(
  data: pg.Pool,
  queue: pg.ClientBase,
  limit: number,
  hooks: RelayHooks = {},
): Promise<number> {
  const { rows } = await data.query<OutboxRow>(
    'select o.id::text as id, o.op, o.task, o.payload, o.spec from gatehouse_job_outbox o order by o.id limit $1',
    [limit],
  );
  if (!rows.length) return 0;
  const ids = rows.map((r) => r.id);
  const q = clientQuery(queue);
  await queue.query('begin');
  try {
    const marked = new Set(
      (
        await q<{ id: string }>(
          'select outbox_id::text as id from gatehouse_job_relay_marks where outbox_id = any($1::bigint[])',
          [ids],
        )
      ).map((r) => r.id),
    );
    const jobs: JobRequest[] = rows
      .filter((r) => !marked.has(r.id))
      .map((r) => {
        const { runAt, ...spec } = r.spec;
        return {
          op: r.op,
          task: r.task,
          payload: r.payload,
          spec: runAt ? { ...spec, runAt: new Date(runAt) } : spec,
        };
      });
    await applyJobs(q, jobs);
    await q('insert into gatehouse_job_relay_marks (outbox_id) select unnest($1::bigint[]) on conflict do nothing', [
      ids,
    ]);
    await queue.query('commit');
  } catch (e) {
    await queue.query('rollback').catch(() => {});
    throw e;
  }
  await hooks.afterQueueCommit?.(ids);
  await data.query('delete from gatehouse_job_outbox where id = any($1::bigint[])', [ids]);
  await hooks.afterOutboxDelete?.(ids);
  await queue.query('delete from gatehouse_job_relay_marks where outbox_id = any($1::bigint[])', [ids]);
  return rows.length;
}

/**
 * Deletes the marks whose outbox rows are gone: left by a relay that died after deleting a batch's
 * outbox rows and before deleting its marks. Run by a relay when it is elected, before its first
 * batch (no other relay works then); the marks of rows still in the outbox stay, so that those
 * rows are skipped.
 */
export async function pruneMarks(data: pg.Pool, queue: pg.ClientBase): Promise<number> {
  const marks = (
    await queue.query<{ id: string }>('select outbox_id::text as id from gatehouse_job_relay_marks')
  ).rows.map((r) => r.id);
  if (!marks.length) return 0;
  const present = new Set(
    (
      await data.query<{ id: string }>('select id::text as id from gatehouse_job_outbox where id = any($1::bigint[])', [
        marks,
      ])
    ).rows.map((r) => r.id),
  );
  const gone = marks.filter((id) => !present.has(id));
  if (gone.length)
    await queue.query('delete from gatehouse_job_relay_marks where outbox_id = any($1::bigint[])', [gone]);
  return gone.length;
}

export interface RelayOptions {
  /** The data database (its outbox). */
  data: pg.Pool;
  /** A direct connection URL of the queue database (session advisory lock). */
  queueUrl: string;
  log: Logger;
  intervalMs: number;
  batchSize: number;
  hooks?: RelayHooks;
}

export interface Relay {
  /** Whether this process holds the relay lock now. */
  readonly leader: boolean;
  stop(): Promise<void>;
}

export function startRelay(o: RelayOptions): Relay {
  let client: pg.Client | undefined;
  let leader = false;
  let stopped = false;
  let wake: (() => void) | undefined;
  let lastError = '';
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  const drop = async () => {
    const c = client;
    client = undefined;
    if (leader) o.log.warn({ component: 'relay' }, 'job relay: stepped down');
    leader = false;
    await c?.end().catch(() => {});
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        if (!client) {
          const c = new pg.Client({ connectionString: o.queueUrl, application_name: 'gatehouse-relay' });
          c.on('error', () => {});
          await c.connect();
          client = c;
        }
        if (!leader) {
          const { rows } = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1::int, 0) as ok', [
            RELAY_LOCK,
          ]);
          if (rows[0]?.ok) {
            await ensureQueueTables(client);
            await pruneMarks(o.data, client);
            leader = true;
            o.log.info({ component: 'relay', host: hostname(), pid: process.pid }, 'job relay elected');
          }
        }
        if (leader) {
          const n = await relayBatch(o.data, client, o.batchSize, o.hooks);
          if (n) o.log.debug({ component: 'relay', jobs: n }, 'jobs relayed');
          lastError = '';
          if (n >= o.batchSize) continue;
        }
      } catch (e) {
        const message = (e as Error).message;
        // Said once per distinct failure, not once per interval.
        if (message !== lastError) o.log.warn({ component: 'relay', err: e }, 'job relay: batch failed; retrying');
        lastError = message;
        await drop();
      }
      if (!stopped) await sleep(o.intervalMs);
    }
  })();
  return {
    get leader() {
      return leader;
    },
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      await drop();
    },
  };
}

/** How many jobs wait in the outbox, and the age of the oldest (seconds): the relay's backlog. */
export async function outboxBacklog(data: pg.Pool): Promise<{ jobs: number; oldestSeconds: number }> {
  const { rows } = await data.query<{ n: number; age: number | null }>(
    'select count(*)::int as n, extract(epoch from now() - min(created_at))::float8 as age from gatehouse_job_outbox',
  );
  return { jobs: rows[0]?.n ?? 0, oldestSeconds: rows[0]?.age ?? 0 };
}

/** The relay of a worker process over the container's data pool and configuration. */
export function startQueueRelay(
  c: { pool: pg.Pool; log: Logger; config: { queue: { relay_interval: number; relay_batch_size: number } } },
  queueUrl: string,
): Relay {
  return startRelay({
    data: c.pool,
    queueUrl,
    log: c.log,
    intervalMs: c.config.queue.relay_interval,
    batchSize: c.config.queue.relay_batch_size,
  });
}
