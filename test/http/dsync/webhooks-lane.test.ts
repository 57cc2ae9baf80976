/**
 * Webhook senders run in job slots of their own (`dsync.webhook.concurrency`, a lane of the worker:
 * src/core/jobs/runner.ts): a directory's events are delivered while every `worker.concurrency`
 * slot is taken by other jobs, and a sender's lingering looks at the lane's slots only. The lane is
 * a second graphile-worker pool of the same process: registered for liveness like the first and
 * stopped with it. `gatehouse worker` starts it from the configuration.
 */
import type { ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskList } from '../../../src/core/jobs/runner.ts';
import { jobSlots } from '../../../src/core/jobs/slots.ts';
import { workerLanes } from '../../../src/task-registry.ts';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { exited, spawnWorker } from '../../helpers/cli.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { deliveredEvents, jobsOf, scimUser } from '../../helpers/webhooks.ts';

let s: TestServer;
let rx: Receiver;
const children: ChildProcess[] = [];

beforeAll(async () => {
  rx = await startReceiver(() => 200);
  s = await startDsyncServer();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map(exited));
  await s?.close();
  await rx?.close();
});

const deliveredFor = (directoryId: string) => deliveredEvents(rx, directoryId);

/** A directory whose webhook is this file's receiver. */
const webhookDirectory = (tenant: string) =>
  createDirectory(s, { tenant, product: 'p', webhook_url: rx.url, webhook_secret: 'whsec' });

const poolsOfThisProcess = async () => {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from worker_pools
    where pid = ${process.pid}`.execute(s.container.db);
  return rows[0]?.n ?? 0;
};

/**
 * A worker with one general slot and `senderSlots` for the senders' lane, whose task list also
 * has `test_hold`: a task that keeps its slot until `release()`. `hold()` enqueues one and waits
 * until it runs.
 */
async function workerWithHold(senderSlots: number) {
  let release = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  let started = 0;
  const test_hold = async () => {
    started++;
    await released;
  };
  const runner = await s.startWorker({
    concurrency: 1,
    lanes: [{ name: 'webhook', tasks: ['webhook_deliver'], concurrency: senderSlots }],
    taskList: { ...(await loadTaskList(s.container)), test_hold },
  });
  return {
    runner,
    started: () => started,
    release: () => release(),
    async hold() {
      await sql`select graphile_worker.add_job('test_hold', '{}'::json)`.execute(s.container.db);
      await eventually(async () => started === 1);
    },
  };
}

describe('the webhook senders’ lane', () => {
  it('is configured by dsync.webhook.concurrency (default 16; 0 puts senders in the worker’s slots)', () => {
    expect(workerLanes(s.container.config)).toEqual([{ name: 'webhook', tasks: ['webhook_deliver'], concurrency: 16 }]);
  });

  it('delivers while every worker.concurrency slot is taken, and stops with the worker', async () => {
    const w = await workerWithHold(2);
    try {
      // Both pools of the worker registered for liveness: a dead process's jobs of either lane are released.
      await eventually(async () => (await poolsOfThisProcess()) === 2);
      await w.hold();
      expect(jobSlots.free()).toBe(2); // the lane's two; the one general slot is held
      expect(jobSlots.free('webhook_deliver')).toBe(2);
      expect(jobSlots.free('test_hold')).toBe(0);

      const d = await webhookDirectory('lane');
      const c = scimClient(s, d);
      for (const n of [1, 2, 3]) expect((await c('POST', '/Users', scimUser(`lane-${n}`))).status).toBe(201);
      // The general slot is still held: the lane's sender delivered them, in order.
      await eventually(async () => deliveredFor(d.id).length === 3);
      expect(deliveredFor(d.id).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(w.started()).toBe(1);
      expect((await jobsOf(s, 'test_hold'))[0]?.locked_at).not.toBeNull();
    } finally {
      w.release();
      await w.runner.stop();
    }
    // Stopping the runner stopped the lane too: its slots are gone and its pool deregistered.
    expect(jobSlots.free('webhook_deliver')).toBe(0);
    expect(await poolsOfThisProcess()).toBe(0);
  });

  it('with concurrency 0, senders share the worker.concurrency slots: none runs while they are taken', async () => {
    const w = await workerWithHold(0);
    try {
      await eventually(async () => (await poolsOfThisProcess()) === 1);
      expect(jobSlots.free('webhook_deliver')).toBe(1);
      await w.hold();
      expect(jobSlots.free('webhook_deliver')).toBe(0);
      const d = await webhookDirectory('nolane');
      expect((await scimClient(s, d)('POST', '/Users', scimUser('nolane-1'))).status).toBe(201);
      const [sender] = await jobsOf(s, 'webhook_deliver');
      expect(sender?.locked_at).toBeNull(); // waiting for the one slot
      w.release();
      await eventually(async () => deliveredFor(d.id).length === 1);
    } finally {
      w.release();
      await w.runner.stop();
    }
  });

  it('gatehouse worker starts the lane from the configuration', async () => {
    const countPools = async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from worker_pools
        where pid <> ${process.pid}`.execute(s.container.db);
      return rows[0]?.n ?? 0;
    };
    const withLane = spawnWorker(s.database.url, TEST_SECRET, { WORKER_POLL_INTERVAL: '100ms' });
    children.push(withLane);
    await eventually(async () => (await countPools()) === 2, 20_000);
    withLane.kill('SIGTERM');
    await exited(withLane);
    expect(withLane.exitCode).toBe(0);
    await eventually(async () => (await countPools()) === 0);

    const without = spawnWorker(s.database.url, TEST_SECRET, {
      WORKER_POLL_INTERVAL: '100ms',
      DSYNC_WEBHOOK_CONCURRENCY: '0',
    });
    children.push(without);
    await eventually(async () => (await countPools()) === 1, 20_000);
    without.kill('SIGTERM');
    await exited(without);
    expect(without.exitCode).toBe(0);
  });
});
