/**
 * Retries and ordering of real-time delivery: graphile-worker backoff (shortened here by making
 * waiting jobs due), failed jobs visible in SQL, `gatehouse jobs retry` and the admin API
 * re-enqueueing them, exactly-once delivery by event id once the receiver recovers, and per-directory
 * commit order under concurrent SCIM traffic to several directories.
 */
import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { createDirectory, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver, verifySignature } from '../../helpers/receiver.ts';
import { deadJobs, jobsOf, nudge, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-retries';
let s: TestServer;
let runner: Runner;

beforeAll(async () => {
  s = await startDsyncServer({ 'dsync.webhook.max_attempts': 4 });
  runner = await s.startWorker({ concurrency: 4 });
});
afterAll(async () => {
  await runner?.stop();
  await s?.close();
});

/** Each directory's delivered events, by directory. */
const byDirectory = (rx: Receiver) => {
  const m = new Map<string, WebhookEvent[]>();
  for (const r of rx.delivered()) {
    const e = r.body as WebhookEvent;
    m.set(e.directory_id, [...(m.get(e.directory_id) ?? []), e]);
  }
  return m;
};

describe('retries', () => {
  it('delivers every event exactly once, in order, after a receiver that answered 500 for a while recovers', async () => {
    let down = true;
    const rx = await startReceiver((_r, n) => (down && n <= 3 ? 500 : 200));
    try {
      const d = await createDirectory(s, {
        tenant: 'flaky',
        product: 'p',
        webhook_url: rx.url,
        webhook_secret: SECRET,
      });
      const c = scimClient(s, d);
      for (let i = 0; i < 12; i++) expect((await c('POST', '/Users', scimUser(`f${i}`))).status).toBe(201);
      // Fails for a while: several attempts, all refused, with backoff between them.
      await eventually(async () => {
        await nudge(s);
        return rx.requests.length >= 3;
      }, 20_000);
      expect(rx.delivered()).toHaveLength(0);
      // Only the head of the directory is retried, not every queued event at once.
      expect(new Set(rx.requests.map((r) => r.body.seq))).toEqual(new Set([1]));
      down = false;
      await eventually(async () => {
        await nudge(s);
        return (await outboxCount(s, d.id)) === 0;
      }, 20_000);
      const got = rx.delivered().map((r) => r.body as WebhookEvent);
      expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 12 }, (_v, i) => i + 1));
      expect(new Set(got.map((e) => e.id)).size).toBe(12);
      for (const r of rx.delivered()) expect(verifySignature(r.headers['boxyhq-signature'], r.raw, SECRET)).toBe(true);
      await eventually(async () => (await jobsOf(s, 'webhook_deliver')).length === 0);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it('leaves jobs failed when the receiver never recovers; `jobs retry` re-enqueues and delivers after recovery', async () => {
    let down = true;
    const rx = await startReceiver(() => (down ? 503 : 200));
    try {
      const d = await createDirectory(s, { tenant: 'dead', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
      const c = scimClient(s, d);
      for (let i = 0; i < 3; i++) await c('POST', '/Users', scimUser(`d${i}`));
      const dead = await eventually(async () => {
        await nudge(s);
        const x = await deadJobs(s, 'webhook_deliver');
        const all = await jobsOf(s, 'webhook_deliver');
        return x.length && x.length === all.length ? x : undefined;
      }, 30_000);
      // README's SQL: dead jobs, their queue and why.
      expect(dead).toHaveLength(1); // the head's job carries the directory's events
      expect(dead[0]).toMatchObject({ attempts: 4, max_attempts: 4, queue_name: `dsync:${d.id}` });
      expect(dead[0]?.last_error).toMatch(/webhook delivery of event .* failed: the webhook endpoint answered 503/);
      expect(dead[0]?.last_error).not.toContain(SECRET);
      expect(await outboxCount(s, d.id)).toBe(3);
      expect(rx.requests.length).toBe(4); // one request per attempt, no storm
      const attempts = rx.requests.length;
      // Nothing happens while dead.
      await nudge(s);
      expect(rx.requests.length).toBe(attempts);

      down = false;
      const env = { DSN: s.database.url, SECRETS_SYSTEM: TEST_SECRET };
      const listed = await runCli(['jobs', 'failed', '--task', 'webhook_deliver'], env);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain('webhook_deliver');
      const retried = await runCli(['jobs', 'retry', '--task', 'webhook_deliver'], env);
      expect(retried.stdout).toMatch(/re-enqueued \d+ job/);
      await eventually(async () => (await outboxCount(s, d.id)) === 0, 20_000);
      const got = rx.delivered().map((r) => r.body as WebhookEvent);
      expect(got.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(await deadJobs(s, 'webhook_deliver')).toEqual([]);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it('re-enqueues failed deliveries through POST /api/v1/dsync/webhooks/retry (per directory)', async () => {
    let down = true;
    const rx = await startReceiver(() => (down ? 500 : 200));
    try {
      const a = await createDirectory(s, {
        tenant: 'apiretry',
        product: 'a',
        webhook_url: rx.url,
        webhook_secret: SECRET,
      });
      const b = await createDirectory(s, {
        tenant: 'apiretry',
        product: 'b',
        webhook_url: rx.url,
        webhook_secret: SECRET,
      });
      await scimClient(s, a)('POST', '/Users', scimUser('ra'));
      await scimClient(s, b)('POST', '/Users', scimUser('rb'));
      await eventually(async () => {
        await nudge(s);
        const dead = await deadJobs(s, 'webhook_deliver');
        return dead.some((j) => j.queue_name === `dsync:${a.id}`) && dead.some((j) => j.queue_name === `dsync:${b.id}`);
      }, 30_000);
      down = false;
      const api = v1(s);
      expect((await v1(s, null)('POST', '/webhooks/retry')).status).toBe(401);
      expect((await api('POST', '/webhooks/retry?directoryId=00000000-0000-4000-8000-0000000000ab')).status).toBe(404);
      const r = await api('POST', '/webhooks/retry', { directoryId: a.id });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ data: { jobs: 1, batches: 0 } });
      await eventually(async () => (await outboxCount(s, a.id)) === 0);
      expect(await outboxCount(s, b.id)).toBe(1);
      expect((await api('GET', '/webhooks/retry')).status).toBe(405);
      const all = await api('POST', '/webhooks/retry');
      expect(all.body.data.jobs).toBe(1);
      await eventually(async () => (await outboxCount(s, b.id)) === 0);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it('gives queued events a job again when their job was removed by hand (crontab maintenance)', async () => {
    await runner.stop();
    const rx = await startReceiver();
    try {
      const d = await createDirectory(s, {
        tenant: 'orphan',
        product: 'p',
        webhook_url: rx.url,
        webhook_secret: SECRET,
      });
      await scimClient(s, d)('POST', '/Users', scimUser('o1'));
      await sql`select graphile_worker.complete_jobs(array(select id from graphile_worker.jobs where queue_name = ${`dsync:${d.id}`}))`.execute(
        s.container.db,
      );
      expect(await outboxCount(s, d.id)).toBe(1);
      await sql`select graphile_worker.add_job('dsync_webhook_maintenance', '{}'::json, max_attempts => 1)`.execute(
        s.container.db,
      );
      runner = await s.startWorker({ concurrency: 4 });
      await eventually(async () => rx.delivered().length === 1 && (await outboxCount(s, d.id)) === 0);
    } finally {
      await rx.close();
    }
  });
});

describe('ordering', () => {
  it('keeps commit order per directory under concurrent SCIM traffic to several directories', async () => {
    let n = 0;
    // Some failures along the way: order must hold across retries too.
    const rx = await startReceiver(() => (++n % 7 === 0 ? 500 : 200));
    try {
      const dirs = await Promise.all(
        [1, 2, 3].map((i) =>
          createDirectory(s, { tenant: 'order', product: `p${i}`, webhook_url: rx.url, webhook_secret: SECRET }),
        ),
      );
      const perDirectory = 15;
      // Four concurrent writers per directory, all directories at once.
      await Promise.all(
        dirs.flatMap((d) => {
          const c = scimClient(s, d);
          return [0, 1, 2, 3].map(async (w) => {
            for (let i = w; i < perDirectory; i += 4) {
              const r = await c('POST', '/Users', scimUser(`${d.id.slice(0, 4)}-${i}`));
              expect(r.status).toBe(201);
            }
          });
        }),
      );
      await eventually(async () => {
        await nudge(s);
        return (await outboxCount(s)) === 0;
      }, 30_000);
      const m = byDirectory(rx);
      for (const d of dirs) {
        const got = m.get(d.id) ?? [];
        expect(got.map((e) => e.seq)).toEqual(Array.from({ length: perDirectory }, (_v, i) => i + 1));
        expect(new Set(got.map((e) => e.id)).size).toBe(perDirectory);
      }
      // Different directories were in flight at the same time (they do not wait for each other).
      const first = dirs.map((d) => rx.requests.findIndex((r) => r.body.directory_id === d.id));
      const last = dirs.map((d) => rx.requests.findLastIndex((r) => r.body.directory_id === d.id));
      expect(Math.max(...first)).toBeLessThan(Math.min(...last));
    } finally {
      await rx.close();
    }
  }, 60_000);
});
