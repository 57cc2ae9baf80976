/**
 * The console's job and webhook pages with the job queue on its own database (`queue.dsn`): two
 * databases on the test server stand in for data and queue, jobs go through the outbox and a relay
 * to a worker on the queue database. A directory whose webhook receiver is down and
 * `dsync.webhook.max_attempts: 1` has a delivery job that failed for good, in the queue database;
 * the pages list it with its error and counts (not the data database's empty graphile-worker
 * tables), and a CSRF-protected retry from either page re-enqueues it there and, the receiver up,
 * the event is delivered.
 */
import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFailedJobs } from '../../../src/core/jobs/admin.ts';
import { openQueuePool } from '../../../src/core/jobs/pooler.ts';
import { type Relay, startQueueRelay } from '../../../src/core/jobs/relay.ts';
import { loadTaskList, startWorker } from '../../../src/core/jobs/runner.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import {
  deadDirectory as deadDirectoryOf,
  type SwitchableReceiver,
  signedInOperator,
} from '../../helpers/console-jobs.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startDsyncServer } from '../../helpers/dsync.ts';

const USERS = [{ subject: 'ada@example.com', password: 'gatehouse-dev', claims: { name: 'Ada Lovelace' } }];
const WEBHOOK_SECRET = 'whsec-console-0123456789';

let s: TestServer;
let q: TestDatabase;
let qp: Awaited<ReturnType<typeof openQueuePool>> | undefined;
let runner: Runner | undefined;
let relay: Relay | undefined;
/** Receivers that answer 503 until `up` is set. */
const receivers: SwitchableReceiver[] = [];

/** The failed delivery jobs of a directory, read where job state lives: the queue database. */
const failedDeliveries = async (directoryId: string) =>
  listFailedJobs(s.container.queue.db, { task: 'webhook_deliver', queue: `dsync:${directoryId}` });

/** Jobs in the data database's graphile-worker tables: none, every job went to the queue database. */
const dataDatabaseJobs = async () =>
  (await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs`.execute(s.container.db)).rows[0]?.n;

beforeAll(async () => {
  q = await createTestDatabase({ empty: true });
  s = await startDsyncServer({
    'dev_ui.enabled': true,
    'dev_ui.users': USERS,
    'console.operators': ['ada@example.com'],
    // A delivery job fails for good at its first failed attempt.
    'dsync.webhook.max_attempts': 1,
    'queue.dsn': q.url,
    'queue.relay_interval': '50ms',
  });
  // A worker as `gatehouse worker` runs it with queue.dsn: graphile-worker on the queue database,
  // and the relay moving the data database's outbox into it.
  qp = await openQueuePool(s.container);
  expect(qp.separate).toBe(true);
  runner = await startWorker({
    pool: qp.pool,
    log: s.container.log,
    concurrency: 2,
    pollInterval: 100,
    taskList: await loadTaskList(s.container),
    crontab: '',
  });
  relay = startQueueRelay(s.container, qp.url);
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await runner?.stop();
  await qp?.close();
  for (const rx of receivers) await rx.close();
  await s?.close();
  await q?.drop();
});

/** A directory whose one delivery job has failed for good, in the queue database only. */
async function deadDirectory(tenant: string) {
  const dead = await deadDirectoryOf(s, tenant, { receivers, secret: WEBHOOK_SECRET, failed: failedDeliveries });
  expect(await dataDatabaseJobs()).toBe(0);
  return dead;
}

const operator = () => signedInOperator(s);

describe('queue.dsn: the console reads and retries jobs in the queue database', () => {
  it('the jobs page counts and lists the failed delivery job with its error, and retries it there', async () => {
    const { d, rx, job } = await deadDirectory('beta');
    const op = await operator();
    const jobs = await op.get('/console/jobs');
    expect(jobs.res.status).toBe(200);
    const counts = /<tr><td><code>webhook_deliver<\/code><\/td>(.*?)<\/tr>/.exec(jobs.html)?.[1] ?? '';
    // waiting, scheduled, running, failed, total
    expect(counts).toMatch(/<td>0<\/td><td>0<\/td><td>0<\/td><td><a [^>]+>1<\/a><\/td><td>1<\/td>$/);
    expect(jobs.html).toContain(`<code>dsync:${d.id}</code>`);
    expect(jobs.html).toContain('failed: the webhook endpoint answered 503');
    expect(jobs.html).toContain(`Retry job ${job.id}`);
    // Without the token nothing is retried.
    expect((await op.post('/console/jobs/retry', { id: String(job.id) })).res.status).toBe(403);
    expect((await failedDeliveries(d.id)).map((j) => j.id)).toEqual([job.id]);
    rx.up = true;
    const ok = await op.post('/console/jobs/retry', { id: String(job.id), csrf: op.csrf });
    expect(ok.res.status).toBe(303);
    expect(ok.res.headers.get('location')).toBe('/console/jobs?done=jobs-retried');
    await eventually(async () => rx.delivered().length === 1, 20_000);
    expect(rx.delivered()[0]?.body.event).toBe('user.created');
    await eventually(async () => (await failedDeliveries(d.id)).length === 0);
    expect(await dataDatabaseJobs()).toBe(0);
    const again = await op.post('/console/jobs/retry', { id: String(job.id), csrf: op.csrf });
    expect(again.res.headers.get('location')).toBe('/console/jobs?done=jobs-none');
  }, 60_000);

  it('the webhooks page lists the failed delivery and re-enqueues it in the queue database', async () => {
    const { d, rx, job } = await deadDirectory('gamma');
    const op = await operator();
    const page = await op.get('/console/webhooks');
    expect(page.res.status).toBe(200);
    expect(page.html).toContain(`<a href="/console/directories/${d.id}/webhook-logs">gamma directory</a>`);
    expect(page.html).toContain('failed: the webhook endpoint answered 503');
    expect(page.html).toContain(`Re-enqueue delivery job ${job.id}`);
    expect((await op.post('/console/webhooks/retry', { job: String(job.id), csrf: 'forged' })).res.status).toBe(403);
    expect((await failedDeliveries(d.id)).map((j) => j.id)).toEqual([job.id]);
    rx.up = true;
    const ok = await op.post('/console/webhooks/retry', { job: String(job.id), csrf: op.csrf });
    expect(ok.res.status).toBe(303);
    expect(ok.res.headers.get('location')).toBe('/console/webhooks?done=webhook-retried');
    await eventually(async () => rx.delivered().length === 1, 20_000);
    expect(rx.delivered()[0]?.body.event).toBe('user.created');
    await eventually(async () =>
      (await op.get(`/console/directories/${d.id}/webhook-logs`)).html.includes('delivered</td>'),
    );
    expect((await op.get('/console/webhooks')).html).toContain('No failed deliveries.');
  }, 60_000);
});
