/**
 * A worker process that dies in its first milliseconds, after graphile-worker created its pool but
 * before the pool's liveness registration (lock + `worker_pools` row) is committed: it must not
 * have locked a job, because a job locked by an unregistered pool is released only by
 * graphile-worker's 4-hour stale-lock sweep. The registration is held back here on purpose (an
 * operator's `LOCK TABLE worker_pools` blocks its insert), which widens that instant to seconds.
 */
import type { ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { exited, spawnWorker } from '../../helpers/cli.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { jobsOf, scimUser } from '../../helpers/webhooks.ts';

let s: TestServer;
let rx: Receiver;
let blocker: pg.Client;
const children: ChildProcess[] = [];

function worker(): ChildProcess {
  const child = spawnWorker(s.database.url, TEST_SECRET, {
    WORKER_POLL_INTERVAL: '100ms',
    WORKER_LIVENESS_CHECK_INTERVAL: '300ms',
  });
  children.push(child);
  return child;
}

beforeAll(async () => {
  rx = await startReceiver(() => 200);
  s = await startDsyncServer();
  blocker = new pg.Client({ connectionString: s.database.url });
  blocker.on('error', () => {});
  await blocker.connect();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map(exited));
  await blocker?.end();
  await s?.close();
  await rx?.close();
});

describe('a worker that dies before its registration is committed', () => {
  it('has locked no job, so the next worker delivers at once', async () => {
    const d = await createDirectory(s, { tenant: 'early', product: 'p', webhook_url: rx.url, webhook_secret: 'whsec' });
    expect((await scimClient(s, d)('POST', '/Users', scimUser('e1'))).status).toBe(201);
    expect(await jobsOf(s, 'webhook_deliver')).toHaveLength(1);

    await blocker.query('begin');
    await blocker.query('lock table worker_pools in share mode');
    const a = worker();
    // The worker's registration insert is waiting on the lock: its pool exists, unregistered.
    await eventually(async () => {
      // (not on `blocker`: pg_stat_activity is a snapshot per transaction)
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
         where wait_event_type = 'Lock' and query like 'insert into worker_pools%'`.execute(s.container.db);
      return (rows[0]?.n ?? 0) > 0;
    }, 45_000);
    // Several poll intervals pass: a pool allowed to fetch would have locked the job by now.
    await new Promise((r) => setTimeout(r, 1000));
    const [job] = await jobsOf(s, 'webhook_deliver');
    expect(job?.locked_at).toBeNull();
    expect(rx.requests).toHaveLength(0);

    a.kill('SIGKILL');
    await exited(a);
    await blocker.query('commit');

    worker();
    await eventually(async () => rx.delivered().length === 1, 45_000);
    await eventually(async () => (await jobsOf(s, 'webhook_deliver')).length === 0);
  }, 120_000);
});
