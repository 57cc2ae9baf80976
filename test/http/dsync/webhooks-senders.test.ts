/**
 * Real-time delivery by one sender per directory: a burst of changes starts one `webhook_deliver`
 * job per directory (not one per event), which POSTs the directory's events in `seq` order over one
 * keep-alive connection; a receiver that fails now and then gets every event, in order, and none
 * twice once answered 2xx; changes committed while the sender is stepping down are not stranded.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { deliveredEvents, nudge, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-senders';
let s: TestServer;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  s = await startDsyncServer({ 'dsync.webhook.max_attempts': 25 });
});
afterAll(async () => {
  await s?.close();
  await rx?.close();
});

const deliveredFor = (directoryId: string) => deliveredEvents(rx, directoryId);

const senderJobs = async () => {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'webhook_deliver'`.execute(
    s.container.db,
  );
  return rows[0]?.n ?? 0;
};

describe('one sender per directory', () => {
  it('queues one sender for a burst of changes and sends them in order over one kept-alive connection', async () => {
    const d = await createDirectory(s, { tenant: 'burst', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const c = scimClient(s, d);
    for (let i = 0; i < 30; i++) expect((await c('POST', '/Users', scimUser(`burst-${i}`))).status).toBe(201);
    expect(await outboxCount(s, d.id)).toBe(30);
    expect(await senderJobs()).toBe(1); // not one job per event
    const runner = await s.startWorker({ concurrency: 2 });
    try {
      await eventually(async () => deliveredFor(d.id).length === 30 && (await outboxCount(s, d.id)) === 0);
      expect(deliveredFor(d.id).map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      const mine = rx.requests.filter((r) => (r.body as WebhookEvent).directory_id === d.id);
      for (const r of mine) expect(r.headers.connection).toBe('keep-alive');
      await eventually(async () => (await senderJobs()) === 0);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_webhook_senders`.execute(
        s.container.db,
      );
      expect(rows[0]?.n).toBe(0); // the sender stepped down
      const { rows: stamped } = await sql<{ n: number }>`select count(*)::int as n from dsync_events
        where directory_id = ${d.id} and delivered_at is not null`.execute(s.container.db);
      expect(stamped[0]?.n).toBe(30);
    } finally {
      await runner.stop();
    }
  });

  it('delivers every event of concurrent writers to several directories in order, once, through receiver failures', async () => {
    let n = 0;
    rx.respond = () => (n++ % 4 === 3 ? 503 : 200); // every fourth POST fails
    const dirs = await Promise.all(
      [0, 1, 2].map((i) =>
        createDirectory(s, { tenant: 'flaky', product: `p${i}`, webhook_url: rx.url, webhook_secret: SECRET }),
      ),
    );
    const runner = await s.startWorker({ concurrency: 3 });
    const nudger = setInterval(() => void nudge(s).catch(() => undefined), 100); // backoff without the wait
    try {
      // Writers keep committing while senders deliver, fail, back off and step down.
      await Promise.all(
        dirs.map(async (d, i) => {
          const c = scimClient(s, d);
          for (let k = 0; k < 20; k++)
            expect((await c('POST', '/Users', scimUser(`flaky-${i}-${k}`))).status).toBe(201);
        }),
      );
      for (const d of dirs) {
        await eventually(async () => (await outboxCount(s, d.id)) === 0, 30_000);
        const got = deliveredFor(d.id);
        expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        expect(new Set(got.map((e) => e.id)).size).toBe(20);
      }
      expect(rx.requests.some((r) => r.status === 503)).toBe(true);
    } finally {
      clearInterval(nudger);
      rx.respond = () => 200;
      await runner.stop();
    }
  }, 60_000);

  it('starts a new sender for an event committed after the running one looked for the last time', async () => {
    const d = await createDirectory(s, { tenant: 'late', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const c = scimClient(s, d);
    const runner = await s.startWorker({ concurrency: 1 });
    try {
      // One event at a time: each finds the previous sender gone or stepping down.
      for (let i = 0; i < 15; i++) {
        expect((await c('POST', '/Users', scimUser(`late-${i}`))).status).toBe(201);
        if (i % 3 === 0) await eventually(async () => deliveredFor(d.id).length === i + 1);
      }
      await eventually(async () => deliveredFor(d.id).length === 15 && (await outboxCount(s, d.id)) === 0);
      expect(deliveredFor(d.id).map((e) => e.seq)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    } finally {
      await runner.stop();
    }
  });
});
