/**
 * Batch mode: `DSYNC_WEBHOOK_BATCH_SIZE` queues events instead
 * of sending them; `POST /api/v1/dsync/cron/process-events` (Api-Key) has them sent as one signed
 * array per directory and batch; `DSYNC_WEBHOOK_BATCH_CRON_INTERVAL` processes the queue on its own.
 * Jackson's bugs fixed: any 2xx is delivered (no resend loop on 204), a failed batch stays queued
 * and is retried with backoff (not in a tight loop), nothing is dropped or sent twice, concurrent
 * processors never send the same events.
 */

import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, EVENT_KEYS, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver, verifySignature } from '../../helpers/receiver.ts';
import { jobsOf, nudge, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-batch';

async function batchServer(overrides: Record<string, unknown>): Promise<{ s: TestServer; runner: Runner }> {
  const s = await startDsyncServer(overrides);
  return { s, runner: await s.startWorker({ concurrency: 4 }) };
}

async function addUsers(s: TestServer, d: { id: string; scim: { secret: string; endpoint?: string } }, n: number) {
  const c = scimClient(s, d as never);
  for (let i = 0; i < n; i++)
    expect((await c('POST', '/Users', scimUser(`${d.id.slice(0, 6)}-${i}`))).status).toBe(201);
}

/** The arrays a directory received, in arrival order. */
const arraysFor = (rx: Receiver, directoryId: string, onlyDelivered = true) =>
  (onlyDelivered ? rx.delivered() : rx.requests)
    .filter((r) => Array.isArray(r.body) && r.body[0]?.directory_id === directoryId)
    .map((r) => r.body as WebhookEvent[]);

const processEvents = (s: TestServer) => v1(s)('POST', '/cron/process-events');

describe('batch size 3 (DSYNC_WEBHOOK_BATCH_SIZE)', () => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    ({ s } = await batchServer({ 'dsync.webhook_batch_size': 3 }));
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });

  it('needs the Api-Key', async () => {
    expect((await v1(s, null)('POST', '/cron/process-events')).status).toBe(401);
    expect((await v1(s, 'wrong-key')('POST', '/cron/process-events')).body).toEqual({
      error: { message: 'Unauthorized' },
    });
    const r = await processEvents(s);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ message: 'Processing started' });
  });

  it('queues events instead of sending them, then POSTs one signed array per directory and batch, in order', async () => {
    const x = await createDirectory(s, {
      tenant: 'b3',
      product: 'x',
      webhook_url: rx.url,
      webhook_secret: SECRET,
      log_webhook_events: true,
    });
    const y = await createDirectory(s, { tenant: 'b3', product: 'y', webhook_url: rx.url, webhook_secret: SECRET });
    await addUsers(s, x, 7);
    await addUsers(s, y, 2);
    expect(await outboxCount(s, x.id)).toBe(7);
    expect(await outboxCount(s, y.id)).toBe(2);
    expect(await jobsOf(s, 'webhook_deliver')).toEqual([]);
    // Jackson's fetchNextBatch: the queue, oldest first, PENDING.
    const queued = await s.container.dsync.controller().events.batch.fetchNextBatch(0, 100);
    expect(queued).toHaveLength(9);
    expect(queued[0]).toMatchObject({ retry_count: 0, status: 'PENDING', event: { event: 'user.created' } });
    expect(rx.requests).toHaveLength(0);

    expect((await processEvents(s)).status).toBe(200);
    await eventually(async () => (await outboxCount(s)) === 0);
    const xs = arraysFor(rx, x.id);
    expect(xs.map((a) => a.length)).toEqual([3, 3, 1]);
    expect(xs.flat().map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(arraysFor(rx, y.id).map((a) => a.map((e) => e.seq))).toEqual([[1, 2]]);
    for (const r of rx.requests) {
      expect(verifySignature(r.headers['boxyhq-signature'], r.raw, SECRET)).toBe(true);
      expect(verifySignature(r.headers['ory-polis-signature'], r.raw, SECRET)).toBe(true);
      expect(r.raw).toBe(JSON.stringify(r.body));
      for (const e of r.body) expect(Object.keys(e)).toEqual(EVENT_KEYS);
    }
    expect(rx.requests).toHaveLength(4);
    // x logs each POST with the array as payload; y (logging off) has none.
    const logs = (await v1(s)('GET', `/events?directoryId=${x.id}`)).body.data;
    expect(logs.map((l: { payload: unknown[] }) => l.payload.length).sort()).toEqual([1, 3, 3]);
    expect(logs.every((l: { delivered: boolean; status_code: number }) => l.delivered && l.status_code === 200)).toBe(
      true,
    );
    expect((await v1(s)('GET', `/events?directoryId=${y.id}`)).body.data).toEqual([]);
  });

  it('counts a 204 as delivered: no resend loop', async () => {
    const r204 = await startReceiver(() => 204);
    try {
      const d = await createDirectory(s, {
        tenant: 'b3',
        product: '204',
        webhook_url: r204.url,
        webhook_secret: SECRET,
      });
      await addUsers(s, d, 4);
      await processEvents(s);
      await eventually(async () => (await outboxCount(s, d.id)) === 0);
      await processEvents(s);
      await eventually(async () => (await jobsOf(s, 'dsync_process_events')).length === 0);
      expect(r204.requests.map((r) => r.body.length)).toEqual([3, 1]);
    } finally {
      await r204.close();
    }
  });

  it('resends kept events from a sequence number in batches (the console’s resend in batch mode)', async () => {
    const d = await createDirectory(s, {
      tenant: 'b3',
      product: 'resend',
      webhook_url: rx.url,
      webhook_secret: SECRET,
    });
    await addUsers(s, d, 4);
    await processEvents(s);
    await eventually(async () => (await outboxCount(s, d.id)) === 0 && arraysFor(rx, d.id).flat().length === 4);
    const services = s.container.dsync.services;
    expect(await services.delivery.resend(d.id, 2, services.policy)).toBe(3);
    expect(await outboxCount(s, d.id)).toBe(3);
    // Queued for batches: nothing goes out before processing.
    expect(arraysFor(rx, d.id).flat()).toHaveLength(4);
    await processEvents(s);
    await eventually(async () => (await outboxCount(s, d.id)) === 0 && arraysFor(rx, d.id).flat().length === 7);
    expect(arraysFor(rx, d.id).flatMap((a) => a.map((e) => e.seq))).toEqual([1, 2, 3, 4, 2, 3, 4]);
  });

  it('keeps a failed batch queued and retries it with backoff, not in a tight loop; nothing is lost or sent twice', async () => {
    let down = true;
    const flaky = await startReceiver(() => (down ? 500 : 200));
    try {
      const d = await createDirectory(s, {
        tenant: 'b3',
        product: 'fail',
        webhook_url: flaky.url,
        webhook_secret: SECRET,
      });
      await addUsers(s, d, 5);
      await processEvents(s);
      await eventually(
        async () =>
          flaky.requests.length === 1 && (await jobsOf(s, 'dsync_process_events')).every((j) => j.locked_at === null),
      );
      const { rows } = await sql<{ attempts: number; next_attempt_at: Date; last_error: string }>`
        select attempts, next_attempt_at, last_error from dsync_webhook_backoff where directory_id = ${d.id}`.execute(
        s.container.db,
      );
      expect(rows[0]).toMatchObject({ attempts: 1, last_error: 'the webhook endpoint answered 500' });
      expect(rows[0]?.next_attempt_at.getTime()).toBeGreaterThan(Date.now());
      expect(await outboxCount(s, d.id)).toBe(5);
      const queued = await s.container.dsync.controller().events.batch.fetchNextBatch(0, 10);
      expect(queued.filter((q) => q.event.directory_id === d.id).map((q) => [q.status, q.retry_count])).toEqual(
        Array(5).fill(['FAILED', 1]),
      );
      // Asking again while the directory backs off sends nothing.
      for (let i = 0; i < 3; i++) await processEvents(s);
      await eventually(async () =>
        (await jobsOf(s, 'dsync_process_events')).every((j) => j.locked_at === null && j.attempts === 0),
      );
      expect(flaky.requests).toHaveLength(1);
      // A run is scheduled for when the backoff ends.
      const scheduled = await sql<{ run_at: Date }>`select run_at from graphile_worker.jobs
        where task_identifier = 'dsync_process_events'`.execute(s.container.db);
      expect(scheduled.rows).toHaveLength(1);
      // The backoff passes (made due here): retried, still failing, attempts 2.
      await nudge(s);
      await eventually(async () => flaky.requests.length === 2);
      down = false;
      await eventually(async () => {
        await nudge(s);
        return (await outboxCount(s, d.id)) === 0;
      }, 20_000);
      const delivered = arraysFor(flaky, d.id).flat();
      expect(delivered.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(new Set(delivered.map((e) => e.id)).size).toBe(5);
      expect(
        (await sql`select 1 from dsync_webhook_backoff where directory_id = ${d.id}`.execute(s.container.db)).rows,
      ).toEqual([]);
    } finally {
      await flaky.close();
    }
  });

  it('never sends the same events twice when processors run concurrently', async () => {
    const slow = await startReceiver(() => ({ status: 200, delayMs: 30 }));
    try {
      const dirs = await Promise.all(
        [1, 2, 3].map((i) =>
          createDirectory(s, { tenant: 'b3', product: `conc${i}`, webhook_url: slow.url, webhook_secret: SECRET }),
        ),
      );
      for (const d of dirs) await addUsers(s, d, 7);
      const batch = s.container.dsync.services.batch;
      // The worker's run plus four in-process runs, all at once.
      await Promise.all([processEvents(s), ...[1, 2, 3, 4].map(() => batch.process())]);
      await eventually(async () => (await outboxCount(s)) === 0);
      for (const d of dirs) {
        const got = arraysFor(slow, d.id).flat();
        expect(got.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      }
      expect(slow.requests).toHaveLength(9); // 3 directories × (3 + 3 + 1)
    } finally {
      await slow.close();
    }
  });

  it('drops the queued events of a directory deactivated before processing', async () => {
    const d = await createDirectory(s, { tenant: 'b3', product: 'off', webhook_url: rx.url, webhook_secret: SECRET });
    await addUsers(s, d, 2);
    await v1(s)('PATCH', `/${d.id}`, { deactivated: true });
    await processEvents(s);
    await eventually(async () => (await outboxCount(s, d.id)) === 0);
    expect(arraysFor(rx, d.id, false)).toEqual([]);
  });
});

describe('batch size 1', () => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    ({ s } = await batchServer({ 'dsync.webhook_batch_size': 1 }));
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });

  it('sends one array of one event per POST, in order', async () => {
    const d = await createDirectory(s, { tenant: 'b1', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    await addUsers(s, d, 4);
    await processEvents(s);
    await eventually(async () => (await outboxCount(s)) === 0);
    expect(arraysFor(rx, d.id).map((a) => a.map((e) => e.seq))).toEqual([[1], [2], [3], [4]]);
  });
});

describe('batch size 100', () => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    ({ s } = await batchServer({ 'dsync.webhook_batch_size': 100 }));
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });

  it('sends everything queued for a directory (up to 100) as one array', async () => {
    const a = await createDirectory(s, { tenant: 'b100', product: 'a', webhook_url: rx.url, webhook_secret: SECRET });
    const b = await createDirectory(s, { tenant: 'b100', product: 'b', webhook_url: rx.url, webhook_secret: SECRET });
    await addUsers(s, a, 30);
    await addUsers(s, b, 3);
    await processEvents(s);
    await eventually(async () => (await outboxCount(s)) === 0);
    expect(arraysFor(rx, a.id).map((x) => x.length)).toEqual([30]);
    expect(arraysFor(rx, a.id)[0]?.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_v, i) => i + 1));
    expect(arraysFor(rx, b.id).map((x) => x.length)).toEqual([3]);
    expect(rx.requests).toHaveLength(2);
  });
});

describe('DSYNC_WEBHOOK_BATCH_CRON_INTERVAL', () => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    ({ s } = await batchServer({ 'dsync.webhook_batch_size': 10, 'dsync.webhook_batch_cron_interval': 1 }));
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });

  it('processes the queue on its own every interval while events are queued, and then stops', async () => {
    const d = await createDirectory(s, { tenant: 'cron', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const started = Date.now();
    await addUsers(s, d, 3);
    // The first queued event armed the timer: a run one interval (1 s) later.
    const [armed] = (
      await sql<{ run_at: Date }>`select run_at from graphile_worker.jobs
      where task_identifier = 'dsync_process_events'`.execute(s.container.db)
    ).rows;
    expect(armed?.run_at.getTime()).toBeGreaterThan(started + 500);
    await eventually(async () => (await outboxCount(s, d.id)) === 0, 10_000);
    expect(arraysFor(rx, d.id).map((a) => a.length)).toEqual([3]);
    // Nothing queued: no further runs are scheduled.
    await eventually(async () => (await jobsOf(s, 'dsync_process_events')).length === 0);
    // The next event starts it again.
    await scimClient(s, d)('POST', '/Users', scimUser('cron-late'));
    await eventually(async () => (await outboxCount(s, d.id)) === 0, 10_000);
    expect(arraysFor(rx, d.id).map((a) => a.length)).toEqual([3, 1]);
  });
});
