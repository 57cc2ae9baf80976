/**
 * A real-time sender that finds nothing left to send lingers (`dsync.webhook.linger`): an event
 * committed meanwhile is sent by the same job run, without a new job; after the linger it steps
 * down; it lingers only while another job slot of its worker is idle, and not once the worker
 * shuts down; and no event is stranded when one commits as a sender's linger ends. A sender with a
 * backlog hands over after its turn when every job slot is busy, so another directory's sender
 * runs before the backlog is through.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { sample, scrape } from '../../helpers/prometheus.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { deliveredEvents, jobsOf, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-linger';
const LINGER_MS = 3000;
let s: TestServer;
let quick: TestServer;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  s = await startDsyncServer({ 'dsync.webhook.linger': `${LINGER_MS}ms` });
  quick = await startDsyncServer({ 'dsync.webhook.linger': '30ms' });
});
afterAll(async () => {
  await s?.close();
  await quick?.close();
  await rx?.close();
});

const deliveredFor = (directoryId: string) => deliveredEvents(rx, directoryId);

/** The directory's sender id (undefined: no sender, it stepped down). */
const senderOf = async (t: TestServer, directoryId: string) => {
  const { rows } = await sql<{ sender_id: string }>`select sender_id from dsync_webhook_senders
    where directory_id = ${directoryId}`.execute(t.container.db);
  return rows[0]?.sender_id;
};

const directory = (t: TestServer, tenant: string) =>
  createDirectory(t, { tenant, product: 'p', webhook_url: rx.url, webhook_secret: SECRET });

describe('a lingering sender', () => {
  it('sends an event committed while it lingers in the same run, then steps down after the linger', async () => {
    const d = await directory(s, 'linger-same-run');
    const c = scimClient(s, d);
    const runner = await s.startWorker({ concurrency: 2 });
    try {
      expect((await c('POST', '/Users', scimUser('linger-1'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 1);
      const sender = await senderOf(s, d.id);
      expect(sender).toBeDefined(); // lingering: it did not step down after its last event
      const [job] = await jobsOf(s, 'webhook_deliver');
      expect(job?.locked_at).not.toBeNull(); // its job is still running

      const sent = Date.now();
      expect((await c('POST', '/Users', scimUser('linger-2'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 2);
      expect(Date.now() - sent).toBeLessThan(LINGER_MS); // not waiting for the linger to end
      // The same sender and the same job delivered it: the change found a sender and queued no job.
      expect(await senderOf(s, d.id)).toBe(sender);
      expect((await jobsOf(s, 'webhook_deliver')).map((j) => j.id)).toEqual([job?.id]);
      expect(deliveredFor(d.id).map((e) => e.seq)).toEqual([1, 2]);

      // Nothing more: it steps down once the linger is over.
      await eventually(async () => (await senderOf(s, d.id)) === undefined, LINGER_MS + 5000);
      await eventually(async () => (await jobsOf(s, 'webhook_deliver')).length === 0);
      // The next change starts a new sender.
      expect((await c('POST', '/Users', scimUser('linger-3'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 3);
      const next = await senderOf(s, d.id);
      expect(next).toBeDefined();
      expect(next).not.toBe(sender);
    } finally {
      await runner.stop();
    }
  });

  it("is woken by its directory's commits in this process, and polls seldom meanwhile", async () => {
    const d = await directory(s, 'linger-wake');
    const c = scimClient(s, d);
    const reads = async (result: 'empty' | 'events') =>
      sample((await scrape(`${s.adminUrl}/admin/metrics/prometheus`)).samples, 'gatehouse_webhook_sender_reads_total', {
        result,
      });
    const emptyReads = () => reads('empty');
    const runner = await s.startWorker({ concurrency: 2 });
    try {
      expect((await c('POST', '/Users', scimUser('wake-1'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 1);
      // Lingering, with nothing to send: a poll every 10 ms would be about 140 reads. Commits
      // here wake the sender, so its polls back off (10, 20, 40 … ms): a handful.
      const before = await emptyReads();
      await new Promise((r) => setTimeout(r, 1400));
      const polls = (await emptyReads()) - before;
      expect(polls).toBeGreaterThan(0);
      expect(polls).toBeLessThan(30);
      expect(await senderOf(s, d.id)).toBeDefined(); // still lingering
      // Its next poll is about 1.2 s away: the commit, not the poll, sends the event, as the
      // commit handed it over (no read of the queue that found events).
      const readsBefore = await reads('events');
      expect((await c('POST', '/Users', scimUser('wake-2'))).status).toBe(201);
      const sent = Date.now();
      await eventually(async () => deliveredFor(d.id).length === 2, 5000, 5);
      expect(Date.now() - sent).toBeLessThan(600);
      expect(deliveredFor(d.id).map((e) => e.seq)).toEqual([1, 2]);
      expect(await reads('events')).toBe(readsBefore);
      await eventually(async () => (await outboxCount(s, d.id)) === 0); // marked delivered

      // The body sent is byte for byte what a read of the queue gives: the operator's resend
      // queues the event again, and the sender reads it.
      const services = s.container.dsync.services;
      expect(await services.delivery.resend(d.id, 2, services.policy)).toBe(1);
      await eventually(async () => deliveredFor(d.id).length === 3);
      expect(await reads('events')).toBeGreaterThan(readsBefore);
      const bodies = rx
        .delivered()
        .filter((r) => (r.body as WebhookEvent).directory_id === d.id && (r.body as WebhookEvent).seq === 2)
        .map((r) => r.raw);
      expect(bodies).toHaveLength(2);
      expect(bodies[1]).toBe(bodies[0]);
    } finally {
      await runner.stop();
    }
  });

  it('records the attempts of events handed over after the directory began to log them', async () => {
    const d = await directory(s, 'linger-log-on');
    const c = scimClient(s, d);
    const runner = await s.startWorker({ concurrency: 2 });
    try {
      expect((await c('POST', '/Users', scimUser('log-on-1'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 1);
      expect(await senderOf(s, d.id)).toBeDefined(); // lingering, with its directory as it loaded it
      expect((await v1(s)('PATCH', `/${d.id}`, { log_webhook_events: true })).status).toBe(200);
      expect((await c('POST', '/Users', scimUser('log-on-2'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 2);
      // The event's log row, written pending with the event, gets the delivered attempt.
      const logged = await eventually(async () => {
        const rows = (await v1(s)('GET', `/events?directoryId=${d.id}`)).body.data as Array<Record<string, unknown>>;
        return rows.length === 1 && rows[0]?.status !== 'pending' ? rows[0] : undefined;
      });
      expect(logged).toMatchObject({ status: 'delivered', status_code: 200, delivered: true, attempt: 1 });
      expect(logged.event_id).toBe(deliveredFor(d.id)[1]?.id);
    } finally {
      await runner.stop();
    }
  });

  it('does not linger in the last idle job slot of its worker', async () => {
    const d = await directory(s, 'linger-one-slot');
    const c = scimClient(s, d);
    const runner = await s.startWorker({ concurrency: 1 });
    try {
      expect((await c('POST', '/Users', scimUser('one-slot-1'))).status).toBe(201);
      const sent = Date.now();
      await eventually(async () => deliveredFor(d.id).length === 1);
      await eventually(async () => (await senderOf(s, d.id)) === undefined, LINGER_MS);
      expect(Date.now() - sent).toBeLessThan(LINGER_MS);
      expect(await outboxCount(s, d.id)).toBe(0);
    } finally {
      await runner.stop();
    }
  });

  it('stops lingering when its worker shuts down', async () => {
    const d = await directory(s, 'linger-shutdown');
    const c = scimClient(s, d);
    const runner = await s.startWorker({ concurrency: 2 });
    let stopped = false;
    try {
      expect((await c('POST', '/Users', scimUser('shutdown-1'))).status).toBe(201);
      await eventually(async () => deliveredFor(d.id).length === 1);
      expect(await senderOf(s, d.id)).toBeDefined(); // lingering
      const t = Date.now();
      await runner.stop();
      stopped = true;
      expect(Date.now() - t).toBeLessThan(1000); // not the rest of the linger
      expect(await senderOf(s, d.id)).toBeUndefined(); // it stepped down on its way out
      expect(await jobsOf(s, 'webhook_deliver')).toEqual([]);
    } finally {
      if (!stopped) await runner.stop();
    }
  });

  it('strands no event committed as a linger ends: all delivered once, in order, then the sender steps down', async () => {
    const dirs = await Promise.all([0, 1].map((i) => directory(quick, `linger-edge-${i}`)));
    const runner = await quick.startWorker({ concurrency: 3 });
    const N = 40;
    try {
      // Gaps around the linger (30 ms): some changes come while the sender lingers, some as it
      // steps down, some after it stepped down.
      await Promise.all(
        dirs.map(async (d, k) => {
          const c = scimClient(quick, d);
          for (let i = 0; i < N; i++) {
            expect((await c('POST', '/Users', scimUser(`edge-${k}-${i}`))).status).toBe(201);
            await new Promise((r) => setTimeout(r, (i * 7 + k * 11) % 60));
          }
        }),
      );
      for (const d of dirs) {
        await eventually(async () => deliveredFor(d.id).length === N && (await outboxCount(quick, d.id)) === 0);
        const seqs = deliveredFor(d.id).map((e) => e.seq);
        expect(seqs).toEqual(Array.from({ length: N }, (_, i) => i + 1));
        expect(new Set(deliveredFor(d.id).map((e) => e.id)).size).toBe(N);
        await eventually(async () => (await senderOf(quick, d.id)) === undefined);
      }
      await eventually(async () => (await jobsOf(quick, 'webhook_deliver')).length === 0);
    } finally {
      await runner.stop();
    }
  }, 60_000);
});

describe('turns', () => {
  it('a sender with a backlog makes room for another directory when every job slot is busy', async () => {
    const slow = await directory(s, 'turn-slow');
    const other = await directory(s, 'turn-other');
    const N = 60;
    // The slow directory's receiver takes 30 ms per event: its backlog lasts about 2 s.
    rx.respond = (r) => ((r.body as WebhookEvent).directory_id === slow.id ? { status: 200, delayMs: 30 } : 200);
    try {
      const c = scimClient(s, slow);
      for (let i = 0; i < N; i++) expect((await c('POST', '/Users', scimUser(`turn-${i}`))).status).toBe(201);
      expect((await scimClient(s, other)('POST', '/Users', scimUser('turn-other'))).status).toBe(201);
      const runner = await s.startWorker({ concurrency: 1 });
      try {
        await eventually(async () => deliveredFor(other.id).length === 1);
        // Delivered while the slow directory's backlog was still being sent, not after it.
        expect(deliveredFor(slow.id).length).toBeLessThan(N);
        await eventually(async () => deliveredFor(slow.id).length === N && (await outboxCount(s, slow.id)) === 0);
        expect(deliveredFor(slow.id).map((e) => e.seq)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
        expect(new Set(deliveredFor(slow.id).map((e) => e.id)).size).toBe(N);
      } finally {
        await runner.stop();
      }
    } finally {
      rx.respond = () => 200;
    }
  }, 30_000);
});
