/**
 * The one write model (src/dsync/change/): a write is planned on what the process knows and
 * applied only if what it read is still there. A row changed behind the process's back (another
 * process, SQL by hand) is read again and the write planned on it: no update is lost and no event
 * carries stale data. On PostgreSQL what is checked is the rows' versions (xmin and ctid, see
 * store/steps.ts), the whole rows read again in the same call when they changed. And the statements
 * of a plan are planned with their values (the name check of a create uses the name indexes in a
 * directory whose table has no statistics yet), but for those sent with arguments, which are
 * prepared once per session (sql/0360_dsync_apply_prepared.sql).
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as steps from '../../../src/dsync/store/steps.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import {
  createDirectory,
  memberIds as memberIdsOf,
  scimClient,
  startDsyncServer,
  storedEvents,
} from '../../helpers/dsync.ts';

let db: TestDatabase;
let s: TestServer;
let admin: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Client({ connectionString: db.url });
  admin.on('error', () => {});
  await admin.connect();
  s = await startDsyncServer({}, { database: db });
});
afterAll(async () => {
  await s?.close();
  await admin?.end();
  await db?.drop();
});

const patchOp = (ops: unknown[]) => ({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: ops });

interface WireRead {
  sql: string;
  args?: unknown[];
  expect: string;
  else?: { sql: string };
}

/** The changes of the gatehouse_dsync_apply calls the process sends while `fn` runs. */
async function applyCalls<T>(fn: () => Promise<T>): Promise<{ value: T; calls: Array<{ reads: WireRead[] }> }> {
  const calls: Array<{ reads: WireRead[] }> = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    const [text, values] = args as [unknown, unknown[] | undefined];
    if (typeof text === 'string' && text.includes('gatehouse_dsync_apply(') && values)
      calls.push(...(JSON.parse(String(values[0])) as { items: Array<{ reads: WireRead[] }> }).items);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    return { value: await fn(), calls };
  } finally {
    pg.Client.prototype.query = query;
  }
}

describe('a plan is applied only on the rows it was made on', () => {
  it('plans a user PATCH again when the row changed behind the process (no lost update)', async () => {
    const d = await createDirectory(s);
    const scim = scimClient(s, d);
    const u = (await scim('POST', '/Users', { userName: 'kept@example.com', active: true })).body;
    // The process reads (and keeps) the row.
    expect((await scim('PATCH', `/Users/${u.id}`, patchOp([{ op: 'add', path: 'title', value: 'one' }]))).status).toBe(
      200,
    );
    // Another writer changes it.
    await admin.query(
      `update dsync_users set raw = (raw::jsonb || '{"nickName":"by hand"}')::json where directory_id = $1 and id = $2`,
      [d.id, u.id],
    );
    const r = await scim('PATCH', `/Users/${u.id}`, patchOp([{ op: 'add', path: 'locale', value: 'fr' }]));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ title: 'one', nickName: 'by hand', locale: 'fr' });
    const last = (await storedEvents(s, d.id)).at(-1) as { event: string; data: { raw: Record<string, unknown> } };
    expect(last.event).toBe('user.updated');
    expect(last.data.raw).toMatchObject({ title: 'one', nickName: 'by hand', locale: 'fr' });
  });

  it('plans a members PATCH again when the group was renamed behind the process (events carry the new name)', async () => {
    const d = await createDirectory(s);
    const scim = scimClient(s, d);
    const u = (await scim('POST', '/Users', { userName: 'member@example.com' })).body;
    const g = (await scim('POST', '/Groups', { displayName: 'Before' })).body;
    const add = patchOp([{ op: 'add', path: 'members', value: [{ value: u.id }] }]);
    const remove = patchOp([{ op: 'remove', path: `members[value eq "${u.id}"]` }]);
    expect((await scim('PATCH', `/Groups/${g.id}`, add)).status).toBe(200);
    await admin.query(`update dsync_groups set name = 'After' where directory_id = $1 and id = $2`, [d.id, g.id]);
    const r = await scim('PATCH', `/Groups/${g.id}`, remove);
    expect([r.status, r.body.displayName]).toEqual([200, 'After']);
    const last = (await storedEvents(s, d.id)).at(-1) as { event: string; data: { group: { name: string } } };
    expect([last.event, last.data.group.name]).toEqual(['group.user_removed', 'After']);
  });

  it('answers 404 for a group deleted behind the process, and writes nothing', async () => {
    const d = await createDirectory(s);
    const scim = scimClient(s, d);
    const g = (await scim('POST', '/Groups', { displayName: 'Gone soon' })).body;
    expect(
      (await scim('PATCH', `/Groups/${g.id}`, patchOp([{ op: 'add', path: 'members', value: [{ value: 'x' }] }])))
        .status,
    ).toBe(200);
    const before = (await storedEvents(s, d.id)).length;
    await admin.query('delete from dsync_groups where directory_id = $1 and id = $2', [d.id, g.id]);
    const r = await scim(
      'PATCH',
      `/Groups/${g.id}`,
      patchOp([{ op: 'add', path: 'members', value: [{ value: 'y' }] }]),
    );
    expect(r.status).toBe(404);
    expect(await storedEvents(s, d.id)).toHaveLength(before);
  });
});

describe('row versions (PostgreSQL)', () => {
  const add = (id: string) => patchOp([{ op: 'add', path: 'members', value: [{ value: id }] }]);
  const remove = (id: string) => patchOp([{ op: 'remove', path: `members[value eq "${id}"]` }]);

  it('checks only the versions of rows it read before, and reads them whole in the same call when they changed', async () => {
    const d = await createDirectory(s);
    const scim = scimClient(s, d);
    const u = (await scim('POST', '/Users', { userName: 'versioned@example.com', name: { givenName: 'Before' } })).body;
    const g = (await scim('POST', '/Groups', { displayName: 'Versioned' })).body;
    const uid = String(u.id);
    expect((await scim('PATCH', `/Groups/${g.id}`, add(uid))).status).toBe(200);
    // Known rows: one call, whose reads are version checks (a TID scan with arguments) that
    // give the versions the plan expects, each naming the whole read to run instead.
    const known = await applyCalls(() => scim('PATCH', `/Groups/${g.id}`, remove(uid)));
    expect(known.value.status).toBe(200);
    expect(known.calls).toHaveLength(1);
    for (const r of known.calls[0]?.reads ?? []) {
      expect(r.sql).toMatch(/\.ctid = /);
      expect(r.args?.length).toBeGreaterThan(0);
      expect(r.expect).toMatch(/^v\d+,\(\d+,\d+\)$/);
      expect(r.else?.sql).toMatch(/^SELECT 'v' \|\| /);
    }
    // The user changed by hand: its version check fails, the whole read gives the new row, and
    // the next call applies the plan made on it (the event carries the new name).
    await admin.query(`update dsync_users set first_name = 'After' where directory_id = $1 and id = $2`, [d.id, uid]);
    const changed = await applyCalls(() => scim('PATCH', `/Groups/${g.id}`, add(uid)));
    expect(changed.value.status).toBe(200);
    expect(changed.calls).toHaveLength(2);
    const last = (await storedEvents(s, d.id)).at(-1) as { event: string; data: { first_name: string } };
    expect([last.event, last.data.first_name]).toEqual(['group.user_added', 'After']);
    // The user deleted by hand: no version to check, so the member is added as one that is not a
    // user (its event carries what is known), as for any id that names no user.
    await admin.query('delete from dsync_users where directory_id = $1 and id = $2', [d.id, uid]);
    expect((await scim('PATCH', `/Groups/${g.id}`, remove(uid))).status).toBe(200);
    expect((await scim('PATCH', `/Groups/${g.id}`, add(uid))).status).toBe(200);
    const gone = (await storedEvents(s, d.id)).at(-1) as { event: string; data: Record<string, unknown> };
    expect([gone.event, Object.keys(gone.data)]).toEqual(['group.user_added', ['id', 'group']]);
  });

  it('gives a row a new version at each write, even twice in one transaction', async () => {
    const d = await createDirectory(s);
    const g = (await scimClient(s, d)('POST', '/Groups', { displayName: 'Twice' })).body;
    // The read that gives the group with its version (`v<xmin>,<ctid>|<json>`).
    const read = steps.group(d.id, String(g.id)).versioned?.stmt.sql as string;
    const versions: string[] = [];
    await admin.query('begin');
    try {
      for (let i = 0; i < 3; i++) {
        const text = String(Object.values((await admin.query(read)).rows[0] as object)[0]);
        versions.push(text.slice(0, text.indexOf('|')));
        // The same values written again: the row reads the same, its version does not.
        await admin.query('update dsync_groups set name = name where directory_id = $1 and id = $2', [d.id, g.id]);
      }
    } finally {
      await admin.query('rollback');
    }
    expect(new Set(versions).size).toBe(3);
    // The second and third were written by one transaction: the same xmin, another ctid.
    const xmin = (v: string) => v.slice(1, v.indexOf(','));
    expect(xmin(versions[1] as string)).toBe(xmin(versions[2] as string));
  });

  it('prepares its statements again in a session that lost them, and keeps one generic plan each', async () => {
    const one = await startDsyncServer({ 'db.pool.max': 1 }, { database: db });
    try {
      const d = await createDirectory(one);
      const scim = scimClient(one, d);
      const u = (await scim('POST', '/Users', { userName: 'prepared@example.com' })).body;
      const g = (await scim('POST', '/Groups', { displayName: 'Prepared' })).body;
      for (let i = 0; i < 8; i++)
        expect((await scim('PATCH', `/Groups/${g.id}`, i % 2 ? remove(String(u.id)) : add(String(u.id)))).status).toBe(
          200,
        );
      // The pool's one session: its prepared statements, planned once (no plan for the values).
      const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`
        select generic_plans, custom_plans from pg_prepared_statements where name like 'gatehouse_dsync_%'`.execute(
        one.container.db,
      );
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(rows.every((r) => Number(r.custom_plans) === 0 && Number(r.generic_plans) > 0)).toBe(true);
      // Deallocated (as DISCARD ALL of a pooler does): the next call prepares them again.
      await sql`deallocate all`.execute(one.container.db);
      expect((await scim('PATCH', `/Groups/${g.id}`, add(String(u.id)))).status).toBe(200);
      expect(await memberIdsOf(one, d.id, String(g.id))).toEqual([String(u.id)]);
    } finally {
      await one.close();
    }
  });
});

describe('the statements of a plan are planned with their values', () => {
  it('checks the names of a create with the name indexes in a directory of 3,000 users without statistics', async () => {
    const d = await createDirectory(s);
    await admin.query(`alter table dsync_users set (autovacuum_enabled = false)`);
    await admin.query(
      `insert into dsync_users (directory_id, id, user_name, email, raw)
       select $1, 'p-' || k, 'p-' || k || '@example.com', 'p-' || k || '@example.com', '{}'
       from generate_series(1, 3000) k`,
      [d.id],
    );
    const read = steps.createCheck(d.id, ['New@Example.com', 'new@example.com'], 'new-user');
    const { rows } = await sql<{
      'QUERY PLAN': string;
    }>`${sql.raw(`EXPLAIN (ANALYZE, BUFFERS) ${read.stmt.sql}`)}`.execute(s.container.db);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/dsync_users_user_name_idx/);
    expect(plan).toMatch(/dsync_users_email_idx/);
    expect(plan).not.toMatch(/Rows Removed by Filter: [1-9]\d{2,}/);
  });
});

describe('the literals a statement carries', () => {
  // Every value of a directory write reaches SQL as a literal (steps.lit): whatever the string,
  // PostgreSQL must read back exactly that string, never end the literal early.
  const text = fc.string({ unit: 'binary', maxLength: 40 }).filter((v) => !v.includes('\u0000') && v.isWellFormed());
  const hostile = fc.oneof(
    text,
    fc.constantFrom("'", "\\'", '\\', "''; drop table dsync_users; --", '"', '{a,b}', 'NULL', 'é\u{1F600}'),
  );

  it('round-trips any text, text array and json value through PostgreSQL', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, fc.array(hostile, { maxLength: 4 }), async (v, vs) => {
        const { rows } = await admin.query<{ t: string; a: string[]; j: unknown }>(
          `select ${steps.lit.text(v)} as t, ${steps.lit.texts(vs)} as a, ${steps.lit.json({ v, vs })} as j`,
        );
        expect(rows[0]?.t).toBe(v);
        expect(rows[0]?.a).toEqual(vs);
        expect(rows[0]?.j).toEqual({ v, vs });
      }),
      { numRuns: 300 },
    );
    const tables = await admin.query(`select 1 from pg_tables where tablename = 'dsync_users'`);
    expect(tables.rowCount).toBe(1);
  });

  it('refuses NUL and lone surrogates as a data exception, and a SCIM write carrying one answers 400', async () => {
    expect(() => steps.lit.text('a\u0000b')).toThrow(expect.objectContaining({ code: '22021' }));
    expect(() => steps.lit.text('a\uD800b')).toThrow(expect.objectContaining({ code: '22021' }));
    const d = await createDirectory(s);
    const r = await scimClient(s, d)('POST', '/Users', { userName: 'nul\u0000@example.com', active: true });
    expect(r.status).toBe(400);
    expect(r.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
  });
});
