/**
 * The events API: `GET /api/v1/dsync/{id}/events?after&limit`, the tenant+product feed, and
 * `events.list` of the controller. Pages in per-directory order with an opaque cursor; resume
 * after a gap; a transaction that commits late is never skipped (commits out of order, both
 * through the writers' path and by rows inserted behind its back); retention purges in bounded
 * batches and the cursor steps over purged numbers only.
 */
import type { Controllers } from 'gatehouse';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, EVENT_KEYS, libraryOn, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';

let s: TestServer;
let lib: Controllers;

beforeAll(async () => {
  s = await startDsyncServer();
  lib = await libraryOn(s);
});
afterAll(async () => {
  await lib?.close();
  await s?.close();
});

interface Page {
  data: WebhookEvent[];
  cursor: string;
  has_more: boolean;
}
const page = async (path: string): Promise<Page> => {
  const r = await v1(s)('GET', path);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Page;
};
const seqs = (p: Page) => p.data.map((e) => e.seq);
const user = (n: number | string) => ({ userName: `u${n}@example.com` });

async function insertRaw(db: pg.Client | pg.PoolClient, directoryId: string, seq: number) {
  await db.query(
    `insert into dsync_events (id, directory_id, seq, event, payload)
     values (gen_random_uuid(), $1::uuid, $2, 'user.created', json_build_object('event', 'user.created', 'directory_id', $3::text))`,
    [directoryId, seq, directoryId],
  );
}

describe('GET /api/v1/dsync/{id}/events', () => {
  it('pages in order with an opaque cursor, and resumes after a gap', async () => {
    const d = await createDirectory(s, { tenant: 'feed', product: 'p' });
    const scim = scimClient(s, d);
    for (let i = 1; i <= 3; i++) await scim('POST', '/Users', user(i));
    const first = await page(`/${d.id}/events?limit=2`);
    expect(seqs(first)).toEqual([1, 2]);
    expect(first.has_more).toBe(true);
    expect(first.data[0]).toMatchObject({ event: 'user.created', tenant: 'feed', product: 'p', directory_id: d.id });
    expect(Object.keys(first.data[0] as object)).toEqual(EVENT_KEYS);
    const second = await page(`/${d.id}/events?limit=2&after=${first.cursor}`);
    expect(seqs(second)).toEqual([3]);
    expect(second.has_more).toBe(false);
    const empty = await page(`/${d.id}/events?after=${second.cursor}`);
    expect(empty).toEqual({ data: [], cursor: second.cursor, has_more: false });
    // Downtime: more changes happen; the saved cursor picks up exactly after the last one read.
    const u = (await scim('POST', '/Users', user(4))).body;
    await scim('DELETE', `/Users/${u.id}`);
    const resumed = await page(`/${d.id}/events?after=${second.cursor}`);
    expect(resumed.data.map((e) => [e.seq, e.event])).toEqual([
      [4, 'user.created'],
      [5, 'user.deleted'],
    ]);
    // The controller answers the same.
    const viaLib = await lib.directorySyncController.events.list({ directoryId: d.id, after: second.cursor });
    expect(viaLib).toEqual({ ...resumed, error: null });
  });

  it('stamps created_at as the events are written: concurrent writes of a directory follow their seq', async () => {
    const d = await createDirectory(s, { tenant: 'stamps', product: 'p' });
    const scim = scimClient(s, d);
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push((await scim('POST', '/Users', user(`st${i}`))).body.id as string);
    // Each PUT locks its user's row, so each is a call of its own; they wait for pooled connections
    // and for the directory row, and are numbered in the order they get it.
    for (let round = 0; round < 3; round++)
      await Promise.all(
        ids.map((id, i) =>
          scim('PUT', `/Users/${id}`, { ...user(`st${i}`), name: { givenName: `G${round}`, familyName: 'F' } }),
        ),
      );
    const events: WebhookEvent[] = [];
    for (let after = ''; ; ) {
      const p = await page(`/${d.id}/events?limit=100${after ? `&after=${after}` : ''}`);
      events.push(...p.data);
      if (!p.has_more) break;
      after = p.cursor;
    }
    expect(events.length).toBe(24 * 4);
    const outOfOrder = events.filter((e, i) => i > 0 && e.created_at < (events[i - 1] as WebhookEvent).created_at);
    expect(outOfOrder.map((e) => e.seq)).toEqual([]);
  });

  it('answers Jackson-style errors for a bad cursor or an unknown directory', async () => {
    const d = await createDirectory(s, { tenant: 'feed-err', product: 'p' });
    const bad = await v1(s)('GET', `/${d.id}/events?after=not-a-cursor`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: { message: 'Invalid cursor.', code: 400 } });
    const missing = await v1(s)('GET', '/00000000-0000-4000-8000-000000000000/events');
    expect(missing.status).toBe(404);
    expect((await v1(s, null)('GET', `/${d.id}/events`)).status).toBe(401);
    expect(await lib.directorySyncController.events.list({ directoryId: d.id, after: '%%%' })).toEqual({
      data: null,
      error: { message: 'Invalid cursor.', code: 400 },
    });
  });

  it('never skips an event whose transaction commits after a later one (rows committed out of order)', async () => {
    const d = await createDirectory(s, { tenant: 'feed-ooo', product: 'p' });
    await scimClient(s, d)('POST', '/Users', user('a'));
    const start = await page(`/${d.id}/events`);
    expect(seqs(start)).toEqual([1]);
    const a = new pg.Client({ connectionString: s.database.url });
    await a.connect();
    try {
      // A writer that bypasses the counter: seq 2 stays uncommitted while seq 3 commits.
      await a.query('begin');
      await insertRaw(a, d.id, 2);
      // Another connection commits seq 3.
      const b = await s.container.pool.connect();
      try {
        await insertRaw(b, d.id, 3);
      } finally {
        b.release();
      }
      const during = await page(`/${d.id}/events?after=${start.cursor}`);
      expect(during.data).toEqual([]);
      expect(during.cursor).toBe(start.cursor);
      await a.query('commit');
      const after = await page(`/${d.id}/events?after=${during.cursor}`);
      expect(seqs(after)).toEqual([2, 3]);
    } finally {
      await a.end();
    }
  });

  it('a write waiting behind an open transaction is read after it, in commit order', async () => {
    const d = await createDirectory(s, { tenant: 'feed-wait', product: 'p' });
    const scim = scimClient(s, d);
    await scim('POST', '/Users', user('w0'));
    const start = await page(`/${d.id}/events`);
    const a = new pg.Client({ connectionString: s.database.url });
    await a.connect();
    try {
      // The writers' path: the directory's counter is taken in the open transaction...
      await a.query('begin');
      const { rows } = await a.query(
        'update dsync_directories set event_seq = event_seq + 1 where id = $1 returning event_seq',
        [d.id],
      );
      await insertRaw(a, d.id, Number(rows[0].event_seq));
      // ...so a SCIM write of the same directory waits, then gets the next number.
      const pending = scim('POST', '/Users', user('w1'));
      // The write is waiting for the directory's row (seen in PostgreSQL, not guessed by a sleep).
      const pid = (await a.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      await eventually(async () => {
        const { rows: waiting } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and ${pid} = any(pg_blocking_pids(pid))`.execute(
          s.container.db,
        );
        return (waiting[0]?.n ?? 0) > 0;
      });
      expect((await page(`/${d.id}/events?after=${start.cursor}`)).data).toEqual([]);
      await a.query('commit');
      expect((await pending).status).toBe(201);
      const after = await page(`/${d.id}/events?after=${start.cursor}`);
      expect(seqs(after)).toEqual([2, 3]);
      expect((after.data[1]?.data as { email?: string } | undefined)?.email).toBe('uw1@example.com');
    } finally {
      await a.end();
    }
  });
});

describe('GET /api/v1/dsync/events/feed (tenant and product)', () => {
  it('merges the directories of the tenant+product, each in order, with one cursor', async () => {
    const d1 = await createDirectory(s, { tenant: 'multi', product: 'p' });
    const d2 = await createDirectory(s, { tenant: 'multi', product: 'p' });
    await scimClient(s, d1)('POST', '/Users', user('m1'));
    await scimClient(s, d2)('POST', '/Users', user('m2'));
    await scimClient(s, d1)('POST', '/Users', user('m3'));
    const p1 = await page('/events/feed?tenant=multi&product=p&limit=2');
    expect(p1.data.map((e) => [e.directory_id, e.seq])).toEqual([
      [d1.id, 1],
      [d2.id, 1],
    ]);
    expect(p1.has_more).toBe(true);
    const p2 = await page(`/events/feed?tenant=multi&product=p&after=${p1.cursor}`);
    expect(p2.data.map((e) => [e.directory_id, e.seq])).toEqual([[d1.id, 2]]);
    expect((await v1(s)('GET', '/events/feed?tenant=multi')).status).toBe(400);
    const viaLib = await lib.directorySyncController.events.list({ tenant: 'multi', product: 'p', after: p1.cursor });
    expect(viaLib.data).toEqual(p2.data);
  });
});

describe('retention', () => {
  it('purges old events in bounded batches with the crontab task; the cursor steps over them only', async () => {
    const d = await createDirectory(s, { tenant: 'ret', product: 'p' });
    const scim = scimClient(s, d);
    for (let i = 1; i <= 3; i++) await scim('POST', '/Users', user(`r${i}`));
    // 1200 old events (more than one purge batch) ahead of the three recent ones.
    await sql`update dsync_events set seq = seq + 1200 where directory_id = ${d.id}`.execute(s.container.db);
    await sql`update dsync_directories set event_seq = event_seq + 1200 where id = ${d.id}`.execute(s.container.db);
    await sql`insert into dsync_events (id, directory_id, seq, event, payload, created_at)
      select gen_random_uuid(), ${d.id}, g, 'user.created', '{}'::json, now() - interval '31 days'
      from generate_series(1, 1200) g`.execute(s.container.db);
    const before = await page(`/${d.id}/events?limit=1`);
    expect(seqs(before)).toEqual([1]);
    const runner = await s.startWorker({ concurrency: 1 });
    try {
      await sql`select graphile_worker.add_job('dsync_events_purge', '{}'::json, max_attempts => 1)`.execute(
        s.container.db,
      );
      await eventually(async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_events
          where directory_id = ${d.id}`.execute(s.container.db);
        return rows[0]?.n === 3;
      });
    } finally {
      await runner.stop();
    }
    // A cursor from before the purge continues with the first event still kept.
    const resumed = await page(`/${d.id}/events?after=${before.cursor}`);
    expect(seqs(resumed)).toEqual([1201, 1202, 1203]);
    expect(seqs(await page(`/${d.id}/events`))).toEqual([1201, 1202, 1203]);
  });

  it('keeps an old event whose webhook is still waiting, and the events after it', async () => {
    const d = await createDirectory(s, {
      tenant: 'ret-wait',
      product: 'p',
      webhook_url: 'https://example.com/h',
      webhook_secret: 'x',
    });
    const scim = scimClient(s, d);
    for (let i = 1; i <= 3; i++) await scim('POST', '/Users', user(`q${i}`));
    // Event 2 still waits for its webhook; 1 and 3 were delivered.
    await sql`delete from dsync_webhook_outbox where directory_id = ${d.id} and seq <> 2`.execute(s.container.db);
    await sql`update dsync_events set created_at = now() - interval '31 days' where directory_id = ${d.id}`.execute(
      s.container.db,
    );
    await s.container.dsync.services.feed.purge();
    expect(seqs(await page(`/${d.id}/events`))).toEqual([2, 3]);
  });
});
