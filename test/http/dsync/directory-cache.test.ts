/**
 * Directories kept in memory for SCIM requests, across two processes on one database: a change made
 * through one process's API is seen by the other as soon as its notification arrives, a change
 * made in the same process at once, and the event counter every SCIM write moves is not a change.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { createDirectory, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';

let database: TestDatabase;
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  database = await createTestDatabase();
  a = await startDsyncServer({}, { database });
  b = await startDsyncServer({}, { database });
  await eventually(async () => a.container.changes.live() && b.container.changes.live());
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await database?.drop();
});

const user = (n: string) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: `${n}@example.com`,
  name: { givenName: n, familyName: 'Test' },
  emails: [{ primary: true, value: `${n}@example.com`, type: 'work' }],
  active: true,
});

/** A SCIM list answer (a deactivated directory answers `{}`). */
const lists = async (s: TestServer, d: DirectoryRecord) => {
  const r = await scimClient(s, d)('GET', '/Users');
  return r.status === 200 && Array.isArray(r.body.Resources);
};

describe('directories kept in memory for SCIM requests', () => {
  it('answers from memory while nothing changed, and sees a change made through another process', async () => {
    const d = await createDirectory(a);
    expect(await lists(b, d)).toBe(true); // now kept by b
    const trigger = (on: boolean) =>
      a.container.pool.query(
        `alter table dsync_directories ${on ? 'enable' : 'disable'} trigger dsync_directories_notify_update`,
      );
    await trigger(false);
    try {
      // Changed behind the memory's back (no notification): b still serves the directory it kept.
      await a.container.pool.query('update dsync_directories set deactivated = true where id = $1', [d.id]);
      expect(await lists(b, d)).toBe(true);
    } finally {
      await trigger(true);
    }
    await a.container.pool.query('update dsync_directories set deactivated = false where id = $1', [d.id]);
    // Deactivated through a's API: b stops serving it once notified.
    expect((await v1(a)('PATCH', `/${d.id}`, { deactivated: true })).status).toBe(200);
    await eventually(async () => !(await lists(b, d)), 5_000);
    expect((await scimClient(b, d)('POST', '/Users', user('ghost'))).body).toEqual({});
    // Deleted through a's API: unknown to b.
    expect((await v1(a)('DELETE', `/${d.id}`)).status).toBe(200);
    await eventually(async () => (await scimClient(b, d)('GET', '/Users')).status === 404, 5_000);
  });

  it('sees a change made through the same process at once', async () => {
    const d = await createDirectory(b);
    expect(await lists(b, d)).toBe(true);
    expect((await v1(b)('PATCH', `/${d.id}`, { deactivated: true })).status).toBe(200);
    expect(await lists(b, d)).toBe(false);
  });

  it('does not notify the event counter that SCIM writes move, and notifies a real change', async () => {
    const d = await createDirectory(a);
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const got: string[] = [];
    listener.on('notification', (n) => got.push(n.payload ?? ''));
    try {
      await listener.query('LISTEN gatehouse_changes');
      const created = await scimClient(a, d)('POST', '/Users', user('counted'));
      expect(created.status).toBe(201);
      const { rows } = await a.container.pool.query('select event_seq from dsync_directories where id = $1', [d.id]);
      expect(Number(rows[0].event_seq)).toBeGreaterThan(0);
      expect((await v1(a)('PATCH', `/${d.id}`, { name: 'renamed' })).status).toBe(200);
      await eventually(async () => got.includes('directory'), 5_000);
      // The notifications arrive in commit order: the SCIM write's would have come first.
      expect(got.filter((p) => p === 'directory')).toHaveLength(1);
    } finally {
      await listener.end();
    }
  });
});
