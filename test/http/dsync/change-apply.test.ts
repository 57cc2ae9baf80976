/**
 * The one write model (src/dsync/change/): a write is planned on what the process knows and
 * applied only if what it read is still there. A row changed behind the process's back (another
 * process, SQL by hand) is read again and the write planned on it: no update is lost and no event
 * carries stale data. And the statements of a plan are planned with their values: the name check
 * of a create uses the name indexes in a directory whose table has no statistics yet.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as steps from '../../../src/dsync/store/steps.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { createDirectory, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';

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
