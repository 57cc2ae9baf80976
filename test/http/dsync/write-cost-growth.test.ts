/**
 * The cost of a SCIM write must not grow with its directory (issue 30). Counted, not timed: the
 * rows and buffers PostgreSQL touches in the dsync tables per `POST /Users` (and per members-only
 * group `PATCH`), at an almost empty directory and again after 20,000 users (and 20,000
 * memberships) were added with set-based SQL, from the same server session.
 *
 * Why the same session: the one-call functions (sql/0240, sql/0260) are PL/pgSQL, whose statements
 * keep their plans for the life of the connection; after five executions PostgreSQL may keep a
 * generic plan, costed while the directory was small. Such a plan (an index range over the whole
 * directory with the names as a filter) made every create read every user of its directory. The
 * server here has one pooled connection, so the creates before and after the fill run in one
 * backend, and autovacuum is off for these tables so that no ANALYZE makes it re-plan in between
 * (as nothing does on a server whose directory grows faster than autovacuum looks).
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';

const FILL = 20_000;
const MEASURED = 20;

let db: TestDatabase;
let s: TestServer;
let admin: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Client({ connectionString: db.url });
  admin.on('error', () => {});
  await admin.connect();
  for (const t of ['dsync_users', 'dsync_groups', 'dsync_group_members', 'dsync_events', 'dsync_webhook_outbox']) {
    await admin.query(`alter table ${t} set (autovacuum_enabled = false)`);
  }
  s = await startDsyncServer({ 'db.pool.max': 1 }, { database: db });
});
afterAll(async () => {
  await s?.close();
  await admin?.end();
  await db?.drop();
});

interface Touched {
  rows: number;
  buffers: number;
}

/** Rows read and buffers touched in the dsync tables and their indexes, by every backend so far. */
async function counters(): Promise<Touched> {
  const { rows } = await admin.query<{ rows: string; buffers: string }>(`
    select
      (select coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) from pg_stat_user_tables where relname like 'dsync%')
      + (select coalesce(sum(idx_tup_read), 0) from pg_stat_user_indexes where relname like 'dsync%') as rows,
      (select coalesce(sum(heap_blks_hit + heap_blks_read + coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)), 0)
         from pg_statio_user_tables where relname like 'dsync%') as buffers`);
  return { rows: Number(rows[0]?.rows), buffers: Number(rows[0]?.buffers) };
}

/** The server's one backend: its pid, and its statistics flushed now (they are otherwise sent at most once a second). */
async function flushed(): Promise<number> {
  const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_stat_force_next_flush()`.execute(
    s.container.db,
  );
  return Number(rows[0]?.pid);
}

/** What `n` runs of `write` touched, per run. */
async function perWrite(n: number, write: (i: number) => Promise<void>): Promise<Touched & { pid: number }> {
  await flushed();
  const before = await counters();
  for (let i = 0; i < n; i++) await write(i);
  const pid = await flushed();
  const after = await counters();
  return { rows: (after.rows - before.rows) / n, buffers: (after.buffers - before.buffers) / n, pid };
}

const oktaUser = (email: string, i: number) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: email,
  name: { givenName: 'Growth', familyName: `User${i}` },
  emails: [{ primary: true, value: email, type: 'work' }],
  displayName: `Growth User${i}`,
  externalId: `00u${i}`,
  active: true,
});

/** FILL users (and a group of them all, and their user.created events) in one directory, set-based. */
async function fill(directoryId: string, groupId: string): Promise<void> {
  await admin.query('begin');
  await admin.query(
    `insert into dsync_users (directory_id, id, user_name, external_id, email, first_name, last_name, raw)
     select $1, 'fill-' || k, 'fill-' || k || '@example.com', '00f' || k, 'fill-' || k || '@example.com', 'Fill', 'User' || k,
       json_build_object('userName', 'fill-' || k || '@example.com', 'name', json_build_object('givenName', 'Fill', 'familyName', 'User' || k))
     from generate_series(1, $2::int) k`,
    [directoryId, FILL],
  );
  await admin.query(
    `insert into dsync_group_members (directory_id, group_id, user_id)
     select $1, $2, 'fill-' || k from generate_series(1, $3::int) k`,
    [directoryId, groupId, FILL],
  );
  await admin.query(
    `with d as (update dsync_directories set event_seq = event_seq + $2::int where id = $1 returning event_seq - $2::int as base)
     insert into dsync_events (id, directory_id, seq, event, payload, delivered_at)
     select gen_random_uuid(), $1, d.base + k, 'user.created', json_build_object('event', 'user.created'), now()
     from d, generate_series(1, $2::int) k`,
    [directoryId, FILL],
  );
  await admin.query('commit');
  // This backend's own counters (the foreign-key checks and buffers of the fill) are flushed now, not
  // up to a second later, when they would land in the measured writes' figures.
  await admin.query('select pg_stat_force_next_flush()');
}

describe('the cost of a SCIM write or read does not grow with its directory', () => {
  it('touches as many rows and buffers per POST /Users and per members PATCH at 20,000 users as at none', async () => {
    const d = await createDirectory(s, {
      tenant: 'growth',
      product: 'p',
      webhook_url: 'http://127.0.0.1:9/hook', // events queued for delivery, as with any webhook (no worker runs)
      webhook_secret: 'whsec-growth',
    });
    const scim = scimClient(s, d);
    const group = String((await scim('POST', '/Groups', { displayName: 'Everyone' })).body.id);
    let n = 0;
    const create = async () => {
      const i = n++;
      const r = await scim('POST', '/Users', oktaUser(`grow-${i}@example.com`, i));
      expect(r.status).toBe(201);
    };
    const ids: string[] = [];
    const patch = async (i: number) => {
      const id = ids[i % ids.length] as string;
      const op =
        Math.floor(i / ids.length) % 2 === 0
          ? { op: 'add', path: 'members', value: [{ value: id }] }
          : { op: 'remove', path: `members[value eq "${id}"]` };
      const r = await scim('PATCH', `/Groups/${group}`, { Operations: [op] });
      expect(r.status).toBe(200);
    };
    // Warm-up: the functions' statements run more than five times while the directory is small.
    for (let i = 0; i < 10; i++) await create();
    const { rows } = await sql<{ id: string }>`select id from dsync_users where directory_id = ${d.id} limit 5`.execute(
      s.container.db,
    );
    ids.push(...rows.map((r) => r.id));
    for (let i = 0; i < 10; i++) await patch(i);

    const small = { create: await perWrite(MEASURED, create), patch: await perWrite(MEASURED, patch) };
    await fill(d.id, group);
    const large = { create: await perWrite(MEASURED, create), patch: await perWrite(MEASURED, patch) };

    const report = (k: 'create' | 'patch') =>
      `${k}: rows ${small[k].rows} → ${large[k].rows}, buffers ${small[k].buffers} → ${large[k].buffers}`;
    // One backend served all of it, so the plans it kept from the small directory were the ones used.
    expect(new Set([small.create.pid, small.patch.pid, large.create.pid, large.patch.pid]).size).toBe(1);
    for (const k of ['create', 'patch'] as const) {
      expect.soft(large[k].rows, report(k)).toBeLessThanOrEqual(small[k].rows * 1.2 + 5);
      // Each B-tree one level deeper costs a buffer per descent (about 15 in all from 10 to 20,000
      // users: the six indexes of the user row, those of the event and outbox rows, the look-ups).
      expect.soft(large[k].buffers, report(k)).toBeLessThanOrEqual(small[k].buffers * 1.2 + 20);
    }
  });

  it('reads the rows of a deep page of users, not every user before it', async () => {
    const d = await createDirectory(s, { tenant: 'growth-pages', product: 'p' });
    const scim = scimClient(s, d);
    const group = String((await scim('POST', '/Groups', { displayName: 'Everyone' })).body.id);
    await fill(d.id, group);
    // As autovacuum leaves a table that stopped changing: statistics, and pages marked all-visible.
    await admin.query('vacuum analyze dsync_users');
    /** Heap blocks of dsync_users (not its indexes) one GET of a page touches. */
    const heapBlocks = async (startIndex: number) => {
      await flushed();
      const read = async () =>
        Number(
          (
            await admin.query<{ n: string }>(
              "select heap_blks_hit + heap_blks_read as n from pg_statio_user_tables where relname = 'dsync_users'",
            )
          ).rows[0]?.n,
        );
      const before = await read();
      const r = await scim('GET', `/Users?startIndex=${startIndex}&count=50`);
      expect(r.status).toBe(200);
      expect(r.body.totalResults).toBe(FILL);
      expect((r.body.Resources as unknown[]).length).toBe(50);
      await flushed();
      return (await read()) - before;
    };
    const first = await heapBlocks(1);
    const deep = await heapBlocks(FILL - 49);
    // A page's keys come from the index (index-only), then its 50 rows; reading the directory up to
    // the page instead touched 4,331 heap blocks at 20,000 users (first page: 12; now 52 and 52).
    expect(deep, `heap blocks: first page ${first}, deep page ${deep}`).toBeLessThanOrEqual(first * 1.5 + 20);
  });
});
