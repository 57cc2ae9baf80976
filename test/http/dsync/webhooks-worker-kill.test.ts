/**
 * A worker process killed in the middle of a delivery (SIGKILL while the receiver holds the POST
 * open): nothing is lost. The next worker finds the dead worker's pool (its liveness lock is gone),
 * releases its job at once (not after graphile-worker's 4 hours) and delivers the event.
 */
import type { ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { exited, spawnWorker } from '../../helpers/cli.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver, verifySignature } from '../../helpers/receiver.ts';
import { jobsOf, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-kill';
let s: TestServer;
let rx: Receiver;
const children: ChildProcess[] = [];

function worker(): ChildProcess {
  const child = spawnWorker(
    s.database.url,
    TEST_SECRET,
    { WORKER_POLL_INTERVAL: '200ms', WORKER_LIVENESS_CHECK_INTERVAL: '300ms', DSYNC_WEBHOOK_TIMEOUT: '60s' },
    ['ignore', 'ignore', 'pipe'],
  );
  children.push(child);
  return child;
}

beforeAll(async () => {
  rx = await startReceiver(() => 'hold');
  s = await startDsyncServer();
});
afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGTERM');
      await Promise.race([exited(c), new Promise((r) => setTimeout(r, 5000))]);
      c.kill('SIGKILL');
    }
  }
  await s?.close();
  await rx?.close();
});

describe('a worker killed mid-delivery', () => {
  it('loses nothing: the job is released from the dead worker and delivered by the next one', async () => {
    const d = await createDirectory(s, { tenant: 'kill', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const c = scimClient(s, d);
    expect((await c('POST', '/Users', scimUser('k1'))).status).toBe(201);
    expect((await c('POST', '/Users', scimUser('k2'))).status).toBe(201);

    const a = worker();
    // Worker A has the first event's POST open at the receiver.
    await eventually(async () => rx.held() === 1, 20_000);
    const [locked] = (await jobsOf(s, 'webhook_deliver')).filter((j) => j.locked_at !== null);
    expect(locked).toBeDefined();
    // A worker process registers two pools: its jobs and its webhook senders' lane.
    const { rows: pools } = await sql<{ id: string }>`select id from worker_pools`.execute(s.container.db);
    expect(pools).toHaveLength(2);

    a.kill('SIGKILL');
    await exited(a);
    const firstAttempt = rx.requests[0];
    rx.respond = () => 200;

    worker();
    await eventually(async () => (await outboxCount(s, d.id)) === 0 && rx.delivered().length === 2, 30_000);
    const delivered = rx.delivered().map((r) => r.body);
    expect(delivered.map((e) => e.seq)).toEqual([1, 2]);
    // The held first attempt and the re-sent one are the same event (receivers de-duplicate by id).
    expect(delivered[0].id).toBe(firstAttempt?.body.id);
    for (const r of rx.delivered()) expect(verifySignature(r.headers['ory-polis-signature'], r.raw, SECRET)).toBe(true);
    await eventually(async () => (await jobsOf(s, 'webhook_deliver')).length === 0);
    // The dead pool was removed from the registry; only the live worker remains.
    const { rows: after } = await sql<{ id: string }>`select id from worker_pools`.execute(s.container.db);
    for (const dead of pools) expect(after.map((p) => p.id)).not.toContain(dead.id);
    expect(after).toHaveLength(2);
  }, 60_000);
});
