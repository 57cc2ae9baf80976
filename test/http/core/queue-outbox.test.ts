/**
 * The job queue on its own database (`queue.dsn`): two databases on the test server stand in for
 * data and queue. Transactions write their jobs to the outbox of the data database; the relay of
 * one `gatehouse worker` (elected with an advisory lock on the queue database) moves them into
 * graphile-worker. Checked: a relay SIGKILLed while it works is replaced by another worker's, and
 * every committed job arrives exactly once, in commit order per directory (queue), none of a
 * rolled-back transaction; a relay that dies between its queue commit and the outbox delete doubles
 * nothing, and the marks left by one that dies after the outbox delete are pruned; and
 * directory-sync webhooks are delivered through the same code path, and the maintenance run checks
 * their senders against the outbox and the queue.
 */

import { runMigrations } from 'graphile-worker';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Container, createContainer } from '../../../src/container.ts';
import { loadConfig } from '../../../src/core/config/load.ts';
import { quietGraphileLogger } from '../../../src/core/db/migrate.ts';
import { withTx } from '../../../src/core/db/tx.ts';
import { openQueuePool } from '../../../src/core/jobs/pooler.ts';
import { ensureQueueTables, pruneMarks, relayBatch, startQueueRelay } from '../../../src/core/jobs/relay.ts';
import { loadTaskList, startWorker } from '../../../src/core/jobs/runner.ts';
import { createLogger } from '../../../src/core/log.ts';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { startReceiver } from '../../helpers/receiver.ts';
import { scimUser } from '../../helpers/webhooks.ts';

const PROBE = 'relay_probe'; // a task no worker has: its jobs stay in the queue to be counted

let data: TestDatabase;
let queue: TestDatabase;
let c: Container;
let queuePool: pg.Pool;

beforeAll(async () => {
  data = await createTestDatabase();
  queue = await createTestDatabase({ empty: true });
  const config = loadConfig({
    env: {},
    overrides: { dsn: data.url, 'queue.dsn': queue.url, 'secrets.system': [TEST_SECRET], 'log.level': 'warn' },
  });
  c = await createContainer({ config, log: createLogger({ level: 'silent' }), databaseUrl: data.url });
  queuePool = new pg.Pool({ connectionString: queue.url, max: 2 });
  queuePool.on('error', () => {});
});

afterAll(async () => {
  await queuePool?.end();
  await c?.close();
  await data?.drop();
  await queue?.drop();
});

interface Probe {
  dir: number;
  n: number;
  rolledBack?: boolean;
}

/** Writes `txs` transactions of `perTx` probe jobs per directory, one writer per directory; every 7th rolls back. */
async function writeProbes(dirs: number, txs: number, perTx: number): Promise<Probe[]> {
  const committed: Probe[] = [];
  await Promise.all(
    Array.from({ length: dirs }, async (_, dir) => {
      let n = 0;
      for (let t = 0; t < txs; t++) {
        const rollBack = t % 7 === 3;
        const probes: Probe[] = Array.from({ length: perTx }, () => ({
          dir,
          n: rollBack ? -1 : n++,
          ...(rollBack ? { rolledBack: true } : {}),
        }));
        const write = withTx(c.db, async (trx) => {
          await c.queue.submit(
            trx,
            probes.map((payload) => ({
              op: 'add' as const,
              task: PROBE,
              payload,
              spec: { queueName: `probe:${dir}`, maxAttempts: 1 },
            })),
          );
          if (rollBack) throw new Error('rolled back on purpose');
        });
        if (rollBack) await expect(write).rejects.toThrow('rolled back on purpose');
        else {
          await write;
          committed.push(...probes);
        }
      }
    }),
  );
  return committed;
}

const markCount = async () =>
  (await queuePool.query<{ n: number }>('select count(*)::int as n from gatehouse_job_relay_marks')).rows[0]?.n ?? 0;

const outboxCount = async () =>
  (await sql<{ n: number }>`select count(*)::int as n from gatehouse_job_outbox`.execute(c.db)).rows[0]?.n ?? 0;

/** The probe jobs in the queue database, in job id order. */
async function queuedProbes(): Promise<Array<Probe & { queue: string }>> {
  const { rows } = await queuePool.query<{ payload: Probe; queue_name: string }>(
    `select j.payload, q.queue_name from graphile_worker._private_jobs j
       join graphile_worker._private_tasks t on t.id = j.task_id
       left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
     where t.identifier = $1 order by j.id`,
    [PROBE],
  );
  return rows.map((r) => ({ ...r.payload, queue: r.queue_name }));
}

async function queueHasGraphile(): Promise<boolean> {
  const { rows } = await queuePool.query(`select 1 from pg_namespace where nspname = 'graphile_worker'`);
  return rows.length > 0;
}

/** Every committed probe exactly once, none rolled back, in commit order per directory. */
function expectExactlyOnceInOrder(got: Array<Probe & { queue: string }>, committed: Probe[]): void {
  expect(got.filter((p) => p.rolledBack)).toEqual([]);
  const key = (p: Probe) => `${p.dir}:${p.n}`;
  const seen = new Map<string, number>();
  for (const p of got) seen.set(key(p), (seen.get(key(p)) ?? 0) + 1);
  expect([...seen.entries()].filter(([, k]) => k > 1)).toEqual([]);
  expect(new Set(got.map(key))).toEqual(new Set(committed.map(key)));
  const dirs = new Set(committed.map((p) => p.dir));
  for (const dir of dirs) {
    const mine = got.filter((p) => p.dir === dir);
    for (const p of mine) expect(p.queue).toBe(`probe:${dir}`);
    expect(mine.map((p) => p.n)).toEqual(mine.map((_, i) => i));
  }
}

describe('queue.dsn: the outbox and its relay', () => {
  it('writes jobs to the outbox of the data database, never to its graphile-worker', async () => {
    expect(c.queue.mode).toBe('outbox');
    const committed = await writeProbes(1, 4, 3); // the fourth transaction rolls back
    expect(committed.length).toBe(9);
    expect(await outboxCount()).toBe(9);
  });

  it('a relay SIGKILLed while it works is replaced by another worker’s: every job once, in order, none rolled back', async () => {
    await sql`delete from gatehouse_job_outbox`.execute(c.db);
    const committed = await writeProbes(4, 60, 10); // 4 directories × 60 transactions × 10 jobs
    expect(committed.length).toBe(4 * (60 - 9) * 10);
    expect(await outboxCount()).toBe(committed.length);
    let fleet: Fleet | undefined;
    try {
      fleet = await startFleet({
        dsn: data.url,
        webs: 0,
        workers: 2,
        env: {
          QUEUE_DSN: queue.url,
          QUEUE_RELAY_BATCH_SIZE: '25',
          QUEUE_RELAY_INTERVAL: '100ms',
          URLS_SELF_ISSUER: 'http://127.0.0.1:9/',
        },
      });
      const f = fleet;
      const [a, b] = await Promise.all([f.startWorker(0), f.startWorker(1)]);
      const elected = (p: typeof a) => p.lines.some((l) => l.msg === 'job relay elected');
      await eventually(async () => elected(a) || elected(b), 30_000);
      expect(elected(a) && elected(b)).toBe(false); // one relay per fleet
      const [leader, standby] = elected(a) ? [a, b] : [b, a];
      // Kill it while it works: some jobs relayed, most still in the outbox.
      await eventually(async () => (await queueHasGraphile()) && (await queuedProbes()).length > 0, 30_000, 5);
      await f.kill(leader);
      const left = await outboxCount();
      expect(left).toBeGreaterThan(0);
      await eventually(async () => elected(standby), 30_000);
      await eventually(async () => (await outboxCount()) === 0, 60_000);
      expectExactlyOnceInOrder(await queuedProbes(), committed);
      // Marks of a relay killed between its outbox delete and its mark delete are pruned at election.
      await eventually(async () => (await markCount()) === 0, 10_000);
    } finally {
      await fleet?.stop();
    }
  }, 180_000);

  it('a relay that dies between its queue commit and the outbox delete doubles nothing', async () => {
    await sql`delete from gatehouse_job_outbox`.execute(c.db);
    // The queue database as a worker prepares it (also when this test runs alone).
    await runMigrations({ pgPool: queuePool, logger: quietGraphileLogger });
    await ensureQueueTables(queuePool);
    await queuePool.query(
      `select graphile_worker.complete_jobs(array(select id from graphile_worker.jobs where task_identifier = $1))`,
      [PROBE],
    );
    const committed = await writeProbes(2, 8, 5);
    const client = new pg.Client({ connectionString: queue.url });
    await client.connect();
    try {
      const died = relayBatch(c.pool, client, 30, {
        afterQueueCommit: () => {
          throw new Error('relay died');
        },
      });
      await expect(died).rejects.toThrow('relay died');
      expect(await outboxCount()).toBe(committed.length); // nothing deleted from the outbox
      expect((await queuedProbes()).length).toBe(30); // but the first 30 are in the queue
      // The next relay: the marks make it skip what the dead one committed.
      expect(await relayBatch(c.pool, client, 30)).toBe(30);
      // This one dies after deleting the outbox rows, before their marks: the marks stay behind
      // until the next relay is elected, and the rest is relayed once.
      const late = relayBatch(c.pool, client, 5, {
        afterOutboxDelete: () => {
          throw new Error('relay died late');
        },
      });
      await expect(late).rejects.toThrow('relay died late');
      expect(await markCount()).toBe(5);
      expect(await pruneMarks(c.pool, client)).toBe(5);
      while (await relayBatch(c.pool, client, 30));
    } finally {
      await client.end();
    }
    expect(await outboxCount()).toBe(0);
    expect(await markCount()).toBe(0);
    expectExactlyOnceInOrder(await queuedProbes(), committed);
  });
});

describe('queue.dsn: directory-sync webhooks through the outbox', () => {
  let s: TestServer;
  let q: TestDatabase;

  beforeAll(async () => {
    q = await createTestDatabase({ empty: true });
    s = await startDsyncServer({ 'queue.dsn': q.url, 'queue.relay_interval': '50ms' });
  });

  afterAll(async () => {
    await s?.close();
    await q?.drop();
  });

  it('delivers every event once, in order per directory, with the queue on its own database', async () => {
    const rx = await startReceiver();
    const qp = await openQueuePool(s.container);
    const runner = await startWorker({
      pool: qp.pool,
      log: s.container.log,
      concurrency: 4,
      pollInterval: 100,
      taskList: await loadTaskList(s.container),
      crontab: '',
    });
    const relay = startQueueRelay(s.container, qp.url);
    try {
      expect(qp.separate).toBe(true);
      const secret = 'whsec_queue_outbox_test_0123456789';
      const dirs = await Promise.all(
        [1, 2].map((i) =>
          createDirectory(s, { tenant: 'outbox', product: `p${i}`, webhook_url: rx.url, webhook_secret: secret }),
        ),
      );
      const perDirectory = 12;
      await Promise.all(
        dirs.map(async (d) => {
          const scim = scimClient(s, d);
          for (let i = 0; i < perDirectory; i++)
            expect((await scim('POST', '/Users', scimUser(`${d.id.slice(0, 4)}-${i}`))).status).toBe(201);
          // A change that fails (a duplicate userName) rolls back: no event, no job.
          expect((await scim('POST', '/Users', scimUser(`${d.id.slice(0, 4)}-0`))).status).toBe(409);
        }),
      );
      await eventually(async () => rx.delivered().length >= 2 * perDirectory, 60_000);
      for (const d of dirs) {
        const seqs = rx
          .delivered()
          .map((r) => r.body as { directory_id: string; seq: number })
          .filter((e) => e.directory_id === d.id)
          .map((e) => e.seq);
        expect(seqs).toEqual(Array.from({ length: perDirectory }, (_, i) => i + 1));
      }
      // The sender jobs ran in the queue database; the data database's graphile-worker saw none.
      const local = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs`.execute(
        s.container.db,
      );
      expect(local.rows[0]?.n).toBe(0);
      await eventually(
        async () =>
          (await sql<{ n: number }>`select count(*)::int as n from dsync_webhook_senders`.execute(s.container.db))
            .rows[0]?.n === 0,
      );
    } finally {
      await relay.stop();
      await runner.stop();
      await qp.close();
      await rx.close();
    }
  }, 120_000);

  it('the maintenance run takes a sender job still in the outbox as live, and replaces one removed from the queue', async () => {
    const rx = await startReceiver();
    const qp = await openQueuePool(s.container);
    const client = new pg.Client({ connectionString: qp.url });
    await client.connect();
    const { delivery } = s.container.dsync.services;
    try {
      const d = await createDirectory(s, {
        tenant: 'maintenance',
        product: 'p',
        webhook_url: rx.url,
        webhook_secret: 'whsec_queue_outbox_test_0123456789',
      });
      expect((await scimClient(s, d)('POST', '/Users', scimUser('maint-1'))).status).toBe(201);
      expect(await delivery.repairOrphans()).toEqual([]); // its job waits in the outbox: live
      while (await relayBatch(s.container.pool, client, 100));
      expect(await delivery.repairOrphans()).toEqual([]); // in the queue now: live
      await qp.pool.query(
        'select graphile_worker.complete_jobs(array(select id from graphile_worker.jobs where queue_name = $1))',
        [`dsync:${d.id}`],
      );
      expect((await delivery.repairOrphans()).length).toBe(1); // removed by hand: replaced
      while (await relayBatch(s.container.pool, client, 100));
      const runner = await startWorker({
        pool: qp.pool,
        log: s.container.log,
        concurrency: 2,
        pollInterval: 100,
        taskList: await loadTaskList(s.container),
        crontab: '',
      });
      try {
        await eventually(
          async () =>
            rx.delivered().filter((r) => (r.body as { directory_id: string }).directory_id === d.id).length === 1,
          30_000,
        );
      } finally {
        await runner.stop();
      }
    } finally {
      await client.end();
      await qp.close();
      await rx.close();
    }
  }, 120_000);
});
