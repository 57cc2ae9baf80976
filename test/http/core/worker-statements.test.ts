/**
 * The statements graphile-worker runs through the worker's pool (src/core/jobs/liveness.ts,
 * gatedPool): one whose connection is lost under it is sent again on a new connection (never inside
 * a transaction), and a stopping worker waits for the completion of its last job, which
 * graphile-worker sends without waiting for it.
 */
import { quickAddJob, type Runner } from 'graphile-worker';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatedPool } from '../../../src/core/jobs/liveness.ts';
import { startWorker } from '../../../src/core/jobs/runner.ts';
import { createLogger } from '../../../src/core/log.ts';
import { eventually, LogCapture } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

let db: TestDatabase;
let pool: pg.Pool;
let admin: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 8 });
  // As the application's pool (src/core/db/client.ts): a client whose connection ends while it is
  // checked out reports it to a listener, not as an uncaught exception.
  pool.on('error', () => {});
  pool.on('connect', (c) => c.on('error', () => {}));
  admin = new pg.Client({ connectionString: db.url });
  admin.on('error', () => {});
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await pool?.end();
  await db?.drop();
});

const open = () => Promise.resolve();

/** Terminates the backend running `select pg_sleep(…)` with `marker` in its text, once it runs. */
async function terminateWhenRunning(marker: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await admin.query<{ pid: number }>(
      `select pid from pg_stat_activity where query like $1 and pid <> pg_backend_pid()`,
      [`%${marker}%`],
    );
    const pid = rows[0]?.pid;
    if (pid) {
      await admin.query('select pg_terminate_backend($1)', [pid]);
      return pid;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the statement never ran');
}

describe('a statement whose connection is lost', () => {
  it('is sent again on a new connection outside a transaction', async () => {
    const gated = gatedPool(pool, open);
    const client = await gated.connect();
    try {
      const sleeping = client.query<{ pid: number }>(
        `select pg_backend_pid() as pid from (select pg_sleep(0.3), 'retry-marker-1') s`,
      );
      const killed = await terminateWhenRunning('retry-marker-1');
      const { rows } = await sleeping;
      expect(rows[0]?.pid).toBeTypeOf('number');
      expect(rows[0]?.pid).not.toBe(killed);
    } finally {
      client.release();
    }
    await gated.settled(1000);
  });

  it('fails inside a transaction (the transaction is gone with its connection)', async () => {
    const gated = gatedPool(pool, open);
    const client = await gated.connect();
    try {
      await client.query('begin');
      const sleeping = client.query(`select pg_sleep(0.3), 'retry-marker-2'`);
      const caught = sleeping.catch((e: unknown) => e);
      await terminateWhenRunning('retry-marker-2');
      expect(String(await caught)).toMatch(/terminat/i);
    } finally {
      client.release(true);
    }
  });

  it('fails at once on an error from the server', async () => {
    const gated = gatedPool(pool, open);
    const client = await gated.connect();
    try {
      await expect(client.query('select * from no_such_table')).rejects.toMatchObject({ code: '42P01' });
    } finally {
      client.release();
    }
  });
});

describe('settled()', () => {
  it('waits for every client taken for a statement, and no longer than its timeout', async () => {
    const gated = gatedPool(pool, open);
    await gated.settled(1000); // nothing out: at once
    const client = await gated.connect();
    let settled = false;
    const waiting = gated.settled(5000).then(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);
    client.release();
    await waiting;
    expect(settled).toBe(true);

    const held = await gated.connect();
    const t = performance.now();
    await gated.settled(150);
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    held.release();
  });
});

describe('a stopping worker', () => {
  let runner: Runner | undefined;
  afterAll(async () => {
    await runner?.stop().catch(() => {});
  });

  it("resolves stop() only once its last job's completion is written", async () => {
    // The pool the worker gets writes job completions 400 ms late: long after graphile-worker has
    // released the job's worker, which is when its own stop() resolves.
    const slowCompletions = new Proxy(pool, {
      get(target, prop) {
        if (prop === 'connect')
          return async () => {
            const c = await target.connect();
            const query = c.query.bind(c) as (...a: unknown[]) => Promise<unknown>;
            return new Proxy(c, {
              get(t, p) {
                if (p !== 'query') {
                  const v = Reflect.get(t, p, t);
                  return typeof v === 'function' ? v.bind(t) : v;
                }
                return async (...args: unknown[]) => {
                  const q = args[0] as { text?: string } | string;
                  const text = typeof q === 'string' ? q : (q.text ?? '');
                  if (/^(with j as \(\s*)?delete from .*_private_jobs/i.test(text))
                    await new Promise((r) => setTimeout(r, 400));
                  return query(...args);
                };
              },
            });
          };
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const { promise: running, resolve: ran } = Promise.withResolvers<void>();
    runner = await startWorker({
      pool: slowCompletions,
      log: createLogger({ destination: new LogCapture().stream }),
      concurrency: 1,
      pollInterval: 100,
      crontab: '',
      taskList: {
        quick_one: async () => {
          ran();
        },
      },
    });
    await quickAddJob({ pgPool: pool }, 'quick_one', {});
    await running;
    await new Promise((r) => setImmediate(r));
    await runner.stop();
    runner = undefined;
    const { rows } = await pool.query(`select count(*)::int as n from graphile_worker._private_jobs`);
    expect(rows[0]?.n).toBe(0);
  });
});

describe('a job locked by a live worker that does not run it', () => {
  it('is released by a liveness sweep once its lock is STRAY_AFTER_MS old; running and fresh ones are not', async () => {
    const ran: string[] = [];
    const { promise: blocking, resolve: unblock } = Promise.withResolvers<void>();
    const { promise: blockerStarted, resolve: started } = Promise.withResolvers<void>();
    const worker = await startWorker({
      pool,
      log: createLogger({ destination: new LogCapture().stream }),
      concurrency: 2,
      pollInterval: 100,
      crontab: '',
      livenessIntervalMs: 200,
      taskList: {
        blocker: async () => {
          started();
          await blocking;
        },
        stray_one: async (p) => {
          ran.push((p as { name: string }).name);
        },
      },
    });
    try {
      const { rows: pools } = await pool.query<{ id: string }>('select id from worker_pools');
      expect(pools).toHaveLength(1);
      const poolId = pools[0]?.id as string;
      const later = new Date(Date.now() + 3_600_000);
      // A running job whose lock is old (it has run for a long time).
      const blocker = await quickAddJob({ pgPool: pool }, 'blocker', {});
      await blockerStarted;
      // A job this pool locked without running it (a fetch whose answer was lost), in a named
      // queue it also locked; and one locked a moment ago, which may be a fetch about to start.
      const stray = await quickAddJob(
        { pgPool: pool },
        'stray_one',
        { name: 'stray' },
        { runAt: later, queueName: 'q-stray' },
      );
      const fresh = await quickAddJob({ pgPool: pool }, 'stray_one', { name: 'fresh' }, { runAt: later });
      await pool.query(
        `update graphile_worker._private_jobs set locked_at = now() - interval '10 minutes' where id = $1`,
        [blocker.id],
      );
      await pool.query(
        `update graphile_worker._private_jobs set locked_by = $2, run_at = now(),
           locked_at = case when id = $1 then now() - interval '10 minutes' else now() end
         where id = any(array[$1, $3]::bigint[])`,
        [stray.id, poolId, fresh.id],
      );
      await pool.query(
        `update graphile_worker._private_job_queues set locked_by = $1, locked_at = now() - interval '10 minutes'
          where queue_name = 'q-stray'`,
        [poolId],
      );
      await eventually(async () => ran.includes('stray'), 10_000);
      const { rows } = await pool.query<{ id: string; locked_by: string | null }>(
        `select id::text, locked_by from graphile_worker._private_jobs where id = any($1::bigint[]) order by id`,
        [[blocker.id, fresh.id]],
      );
      expect(rows).toEqual([
        { id: String(blocker.id), locked_by: poolId },
        { id: String(fresh.id), locked_by: poolId },
      ]);
      expect(ran).toEqual(['stray']);
    } finally {
      unblock();
      await worker.stop();
    }
  });
});
