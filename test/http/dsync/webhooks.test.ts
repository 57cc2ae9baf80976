/**
 * Real-time webhook delivery: signed POSTs from graphile-worker jobs to a
 * loopback receiver. Signatures recomputed here, every event type's body, the delivered objects are
 * the callbacks' objects, 2xx = delivered, drops, webhook logs on and off, and the v1 / controller
 * log operations.
 */

import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, LogCapture, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver, verifySignature } from '../../helpers/receiver.ts';
import { jobsOf, nudge, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-test-secret';
const USER_KEYS = ['id', 'first_name', 'last_name', 'email', 'active', 'raw'];
const WIRE_KEYS = ['event', 'tenant', 'product', 'directory_id', 'data', 'id', 'seq', 'created_at'];

let s: TestServer;
let rx: Receiver;
let runner: Runner;
const logs = new LogCapture();

beforeAll(async () => {
  rx = await startReceiver();
  s = await startDsyncServer({}, { log: logs.logger('info') });
  runner = await s.startWorker({ concurrency: 4 });
});
afterAll(async () => {
  await s?.close();
  await rx?.close();
});

const api = () => v1(s);
const bodiesFor = (directoryId: string) =>
  rx.requests.filter((r) => r.body?.directory_id === directoryId).map((r) => r.body as WebhookEvent);
const deliveredFor = (directoryId: string) => rx.delivered().filter((r) => r.body?.directory_id === directoryId);

describe('real-time delivery', () => {
  it('signs every POST with both headers over the raw body, and sends Jackson’s event plus id, seq, created_at', async () => {
    const d = await createDirectory(s, { tenant: 'sig', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const r = await scimClient(s, d)('POST', '/Users', scimUser(1));
    expect(r.status).toBe(201);
    const [got] = await eventually(async () => {
      const x = deliveredFor(d.id);
      return x.length ? x : undefined;
    });
    if (!got) throw new Error('no delivery');
    expect(got.method).toBe('POST');
    expect(got.headers['content-type']).toBe('application/json');
    expect(verifySignature(got.headers['boxyhq-signature'], got.raw, SECRET)).toBe(true);
    expect(verifySignature(got.headers['ory-polis-signature'], got.raw, SECRET)).toBe(true);
    expect(verifySignature(got.headers['boxyhq-signature'], got.raw, 'another-secret')).toBe(false);
    expect(verifySignature(got.headers['boxyhq-signature'], `${got.raw} `, SECRET)).toBe(false);
    const t = Number(/^t=(\d+),/.exec(String(got.headers['boxyhq-signature']))?.[1]);
    expect(Math.abs(Date.now() - t)).toBeLessThan(60_000); // milliseconds, not seconds
    // The raw body is exactly the JSON of the object, keys in Jackson's order then ours.
    expect(Object.keys(got.body)).toEqual(WIRE_KEYS);
    expect(got.raw).toBe(JSON.stringify(got.body));
    expect(got.body).toMatchObject({
      event: 'user.created',
      tenant: 'sig',
      product: 'p',
      directory_id: d.id,
      data: { id: r.body.id, first_name: 'Given1', last_name: 'Family1', email: 'user1@example.com', active: true },
      seq: 1,
    });
    expect(Object.keys(got.body.data)).toEqual(USER_KEYS);
    expect(new Date(got.body.created_at).toISOString()).toBe(got.body.created_at);
    const { rows } = await sql<{ id: string; delivered_at: Date | null }>`
      select id, delivered_at from dsync_events where directory_id = ${d.id}`.execute(s.container.db);
    expect(rows[0]?.id).toBe(got.body.id);
    await eventually(async () => (await outboxCount(s, d.id)) === 0);
    const stamped = await sql<{ delivered_at: Date | null }>`
      select delivered_at from dsync_events where id = ${got.body.id}`.execute(s.container.db);
    expect(stamped.rows[0]?.delivered_at).toBeInstanceOf(Date);
  });

  it('delivers all eight event types with Jackson’s payloads, in commit order', async () => {
    const d = await createDirectory(s, { tenant: 'types', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', scimUser(2))).body;
    await c('PATCH', `/Users/${u.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    const g = (await c('POST', '/Groups', { displayName: 'Engineering' })).body;
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'add', path: 'members', value: [{ value: u.id }] }] });
    await c('PUT', `/Groups/${g.id}`, { displayName: 'Engineering 2' });
    await c('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'remove', path: `members[value eq "${u.id}"]` }],
    });
    await c('DELETE', `/Groups/${g.id}`);
    await c('DELETE', `/Users/${u.id}`);
    const got = await eventually(async () => {
      const x = deliveredFor(d.id);
      return x.length >= 8 ? x.map((r) => r.body as WebhookEvent) : undefined;
    });
    expect(got.map((e) => e.event)).toEqual([
      'user.created',
      'user.updated',
      'group.created',
      'group.user_added',
      'group.updated',
      'group.user_removed',
      'group.deleted',
      'user.deleted',
    ]);
    expect(got.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const e of got) {
      expect(Object.keys(e)).toEqual(WIRE_KEYS);
      expect(e).toMatchObject({ tenant: 'types', product: 'p', directory_id: d.id });
    }
    const [created, updated, gCreated, added, gUpdated, removed, gDeleted, deleted] = got;
    expect(Object.keys(created?.data ?? {})).toEqual(USER_KEYS);
    expect(updated?.data).toMatchObject({ id: u.id, active: false });
    expect(gCreated?.data).toEqual({ id: g.id, name: 'Engineering', raw: expect.objectContaining({ id: g.id }) });
    expect(Object.keys(added?.data ?? {})).toEqual([...USER_KEYS, 'group']);
    expect(added?.data).toMatchObject({ id: u.id, group: { id: g.id, name: 'Engineering' } });
    expect(gUpdated?.data).toMatchObject({ id: g.id, name: 'Engineering 2' });
    expect(removed?.data).toMatchObject({ id: u.id, group: { id: g.id, name: 'Engineering 2' } });
    expect(Object.keys(gDeleted?.data ?? {})).toEqual(['id', 'name', 'raw']);
    expect(deleted?.data).toMatchObject({ id: u.id, email: 'user2@example.com' });
    // Every body arrived once.
    expect(new Set(got.map((e) => e.id)).size).toBe(8);
  });

  it('answers the identity provider without waiting for the receiver', async () => {
    const slow = await startReceiver(() => 'hold');
    try {
      const d = await createDirectory(s, {
        tenant: 'slow',
        product: 'p',
        webhook_url: slow.url,
        webhook_secret: SECRET,
      });
      const c = scimClient(s, d);
      const started = Date.now();
      expect((await c('POST', '/Users', scimUser(3))).status).toBe(201);
      await eventually(async () => slow.held() === 1);
      // The receiver holds the first delivery open; later SCIM calls still answer at once.
      expect((await c('POST', '/Users', scimUser(4))).status).toBe(201);
      expect(Date.now() - started).toBeLessThan(5_000);
      slow.release(200);
      await eventually(async () => {
        if (slow.held()) slow.release(200);
        return slow.delivered().length === 2;
      });
      expect(slow.delivered().map((r) => r.body.seq)).toEqual([1, 2]);
    } finally {
      await slow.close();
    }
  });

  it('counts any 2xx as delivered: a 204 is not sent again', async () => {
    const r204 = await startReceiver(() => 204);
    try {
      const d = await createDirectory(s, {
        tenant: 'r204',
        product: 'p',
        webhook_url: r204.url,
        webhook_secret: SECRET,
      });
      const c = scimClient(s, d);
      for (let i = 0; i < 3; i++) await c('POST', '/Users', scimUser(`204-${i}`));
      await eventually(async () => r204.delivered().length === 3 && (await outboxCount(s, d.id)) === 0);
      await eventually(async () => (await jobsOf(s, 'webhook_deliver')).length === 0);
      expect(r204.requests).toHaveLength(3);
    } finally {
      await r204.close();
    }
  });

  it('queues nothing for a directory without webhook (Jackson drops the event)', async () => {
    const d = await createDirectory(s, { tenant: 'nohook', product: 'p' });
    await scimClient(s, d)('POST', '/Users', scimUser(5));
    expect(await outboxCount(s, d.id)).toBe(0);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker._private_jobs
      where payload->>'directoryId' = ${d.id}`.execute(s.container.db);
    expect(rows[0]?.n).toBe(0);
  });

  it('gives requests.handle callbacks the same objects that are delivered (webhooksWithCallback)', async () => {
    const d = await createDirectory(s, { tenant: 'cb', product: 'p', webhook_url: rx.url, webhook_secret: SECRET });
    const seen: WebhookEvent[] = [];
    const ctl = s.container.dsync.controller({ webhooksWithCallback: true });
    const r = await ctl.requests.handle(
      {
        method: 'POST',
        directoryId: d.id,
        resourceType: 'users',
        apiSecret: d.scim.secret,
        body: scimUser(6),
      },
      (e) => {
        seen.push(e);
      },
    );
    expect(r.status).toBe(201);
    expect(seen).toHaveLength(1);
    const delivered = await eventually(async () => deliveredFor(d.id)[0]);
    expect(delivered.body).toEqual(seen[0]);
    expect(delivered.raw).toBe(JSON.stringify(seen[0]));
  });
});

describe('drops at delivery time', () => {
  it('drops (and logs at info) the events of a directory deactivated or deleted before delivery', async () => {
    await runner.stop();
    const a = await createDirectory(s, {
      tenant: 'drop',
      product: 'a',
      webhook_url: rx.url,
      webhook_secret: SECRET,
      log_webhook_events: true,
    });
    const b = await createDirectory(s, { tenant: 'drop', product: 'b', webhook_url: rx.url, webhook_secret: SECRET });
    await scimClient(s, a)('POST', '/Users', scimUser(7));
    await scimClient(s, b)('POST', '/Users', scimUser(8));
    expect(await outboxCount(s, a.id)).toBe(1);
    await api()('PATCH', `/${a.id}`, { deactivated: true });
    await api()('DELETE', `/${b.id}`);
    expect(await outboxCount(s, b.id)).toBe(0); // went with the directory
    runner = await s.startWorker({ concurrency: 4 });
    await eventually(
      async () => (await outboxCount(s, a.id)) === 0 && (await jobsOf(s, 'webhook_deliver')).length === 0,
    );
    expect(bodiesFor(a.id)).toEqual([]);
    expect(bodiesFor(b.id)).toEqual([]);
    const dropped = logs.entries().find((e) => e.msg === 'webhook events dropped' && e.directoryId === a.id);
    expect(dropped).toMatchObject({ level: 30, events: 1, reason: 'directory deactivated' });
    // The event's webhook log row, written pending when it was queued, says it was not sent and why.
    expect((await api()('GET', `/events?directoryId=${a.id}`)).body.data).toEqual([
      expect.objectContaining({
        status: 'failed',
        delivered: false,
        status_code: null,
        attempt: 0,
        error: 'not delivered: directory deactivated',
      }),
    ]);
    const gone = logs.entries().find((e) => e.msg === 'webhook events dropped' && e.directoryId === b.id);
    expect(gone).toMatchObject({ level: 30, reason: 'directory deleted' });
    // Reactivated: new events are delivered again.
    await api()('PATCH', `/${a.id}`, { deactivated: false });
    await scimClient(s, a)('POST', '/Users', scimUser(9));
    await eventually(async () => deliveredFor(a.id).length === 1);
  });
});

describe('webhook logs', () => {
  it('writes the log row when the event is queued, pending, updates it on each attempt, and records nothing when the flag is off', async () => {
    // The first two POSTs are held (the row reads pending, then failed, meanwhile), answered 500
    // and 200 by the test; later ones 200 at once.
    const flaky = await startReceiver((_r, n) => (n <= 2 ? 'hold' : 200));
    try {
      const on = await createDirectory(s, {
        tenant: 'logs',
        product: 'p',
        webhook_url: flaky.url,
        webhook_secret: SECRET,
        log_webhook_events: true,
      });
      const off = await createDirectory(s, {
        tenant: 'logs',
        product: 'p',
        webhook_url: rx.url,
        webhook_secret: SECRET,
      });
      const created = await scimClient(s, on)('POST', '/Users', scimUser(10));
      expect(created.status).toBe(201);
      // Right after the write, before any POST ended: the event's row is there, pending.
      const queued = await api()('GET', `/events?directoryId=${on.id}`);
      expect(queued.body.data).toHaveLength(1);
      const [pending] = queued.body.data;
      expect(pending).toMatchObject({
        directory_id: on.id,
        webhook_endpoint: flaky.url,
        status: 'pending',
        status_code: null,
        delivered: false,
        error: null,
        attempt: 0,
        completed_at: null,
        duration_ms: null,
      });
      expect(pending.event_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(pending.payload).toMatchObject({ event: 'user.created', directory_id: on.id });
      const row = async () => (await api()('GET', `/events/${pending.id}?directoryId=${on.id}`)).body.data;
      await eventually(async () => {
        await nudge(s);
        return flaky.held() === 1;
      }, 20_000);
      // The POST is on its way: still pending.
      expect((await row()).status).toBe('pending');
      flaky.release(500);
      // The first attempt's outcome, while the retry is held.
      await eventually(async () => {
        await nudge(s);
        return flaky.held() === 1 && flaky.requests.length === 2;
      }, 20_000);
      expect(await row()).toMatchObject({
        status: 'failed',
        status_code: 500,
        delivered: false,
        error: 'the webhook endpoint answered 500',
        attempt: 1,
      });
      flaky.release(200);
      await scimClient(s, off)('POST', '/Users', scimUser(11));
      await eventually(async () => {
        await nudge(s);
        // Answered, then logged, then marked: an empty queue means the log row has its outcome.
        return (
          flaky.delivered().length === 1 && deliveredFor(off.id).length === 1 && (await outboxCount(s, on.id)) === 0
        );
      }, 20_000);
      const list = await api()('GET', `/events?directoryId=${on.id}`);
      expect(list.status).toBe(200);
      // One row for the event, updated by both attempts.
      expect(list.body.data).toHaveLength(1);
      const [ok] = list.body.data;
      expect(ok).toMatchObject({
        id: pending.id,
        event_id: pending.event_id,
        created_at: pending.created_at,
        status: 'delivered',
        status_code: 200,
        delivered: true,
        error: null,
        attempt: 2,
      });
      expect(ok.payload).toEqual(flaky.delivered()[0]?.body);
      expect(ok.payload.id).toBe(pending.event_id);
      expect(Date.parse(ok.completed_at)).toBeGreaterThanOrEqual(Date.parse(ok.created_at));
      expect(ok.duration_ms).toBeGreaterThanOrEqual(0);
      expect(JSON.stringify(list.body)).not.toContain(SECRET);
      // off: nothing recorded
      expect((await api()('GET', `/events?directoryId=${off.id}`)).body).toEqual({ data: [] });
      // A second event: a row of its own, delivered at the first attempt.
      await scimClient(s, on)('POST', '/Users', scimUser(12));
      await eventually(async () => {
        await nudge(s);
        return flaky.delivered().length === 2 && (await outboxCount(s, on.id)) === 0;
      }, 20_000);
      const [second] = (await api()('GET', `/events?directoryId=${on.id}`)).body.data; // newest first
      expect(second).toMatchObject({ status: 'delivered', status_code: 200, attempt: 1 });
      expect(second.event_id).not.toBe(ok.event_id);
      // tenant+product scope lists the same; paging
      const page = await api()('GET', '/events?tenant=logs&product=p&pageOffset=1&pageLimit=1');
      expect(page.body.data.map((x: { id: string }) => x.id)).toEqual([ok.id]);
      // single
      expect((await api()('GET', `/events/${ok.id}?directoryId=${on.id}`)).body).toEqual({ data: ok });
      expect((await api()('GET', `/events/${ok.id}?tenant=other&product=p`)).body).toEqual({ data: null });
      // library controller: Jackson's shapes
      const wl = s.container.dsync.controller().webhookLogs.setTenantAndProduct('logs', 'p');
      expect((await wl.getAll({ directoryId: on.id })).data).toHaveLength(2);
      expect(await wl.get(ok.id)).toEqual(ok);
      await wl.delete(second.id);
      expect((await wl.getAll({ directoryId: on.id })).data.map((x) => x.id)).toEqual([ok.id]);
      // DELETE /events?directoryId empties the directory's logs
      expect((await api()('DELETE', `/events?directoryId=${on.id}`)).body).toEqual({ data: null });
      expect((await api()('GET', `/events?directoryId=${on.id}`)).body).toEqual({ data: [] });
      expect((await api()('GET', '/events')).status).toBe(400);
      expect((await api()('GET', '/events?directoryId=00000000-0000-4000-8000-0000000000aa')).status).toBe(404);
    } finally {
      await flaky.close();
    }
  });

  it('purges logs older than dsync.webhook_logs_ttl with the crontab task', async () => {
    const d = await createDirectory(s, { tenant: 'purge', product: 'p', log_webhook_events: true });
    await sql`insert into dsync_webhook_logs (id, directory_id, webhook_endpoint, payload, status_code, delivered, attempt, created_at, completed_at)
      select gen_random_uuid(), ${d.id}, 'https://example.com/h', '{}', 200, true, 1, now() - interval '8 days', now() - interval '8 days'
      from generate_series(1, 1500)`.execute(s.container.db);
    await sql`insert into dsync_webhook_logs (id, directory_id, webhook_endpoint, payload, status_code, delivered, attempt, created_at, completed_at)
      values (gen_random_uuid(), ${d.id}, 'https://example.com/h', '{}', 200, true, 1, now(), now())`.execute(
      s.container.db,
    );
    await sql`select graphile_worker.add_job('dsync_webhook_logs_purge', '{}'::json, max_attempts => 1)`.execute(
      s.container.db,
    );
    await eventually(async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_webhook_logs
        where directory_id = ${d.id}`.execute(s.container.db);
      return rows[0]?.n === 1;
    });
  });
});
