/**
 * PATCHes of a group that only add and remove listed members run side by side: they take a shared
 * lock on the group row, so they neither wait for each other nor for a reader holding a share lock
 * on the group; a PATCH that renames the group (or sets the whole member list) still
 * locks the row. What holds under concurrency: no member lost, one event per membership change.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, memberIds, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const userBody = (name: string) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: name,
  name: { givenName: 'G', familyName: 'F' },
  emails: [{ primary: true, value: name, type: 'work' }],
  active: true,
});

let s: TestServer;
let dir: DirectoryRecord;
let c: ReturnType<typeof scimClient>;
beforeAll(async () => {
  s = await startDsyncServer();
  dir = await createDirectory(s);
  c = scimClient(s, dir);
});
afterAll(async () => {
  await s?.close();
});

const withinMs = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);

async function group(name: string): Promise<string> {
  const g = await c('POST', '/Groups', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    displayName: name,
    members: [],
  });
  expect(g.status).toBe(201);
  return g.body.id as string;
}

describe('group member PATCH', () => {
  it('adds members while the group row is share-locked; a rename waits for the lock', async () => {
    const u = (await c('POST', '/Users', userBody('locked-member@example.com'))).body.id as string;
    const gid = await group('share-locked');
    const holder = new pg.Client({ connectionString: s.database.url });
    await holder.connect();
    try {
      await holder.query('begin');
      // A share lock held elsewhere: it waits out FOR UPDATE, not another share lock.
      await holder.query('select 1 from dsync_groups where id = $1 for share', [gid]);
      const add2 = () =>
        c('PATCH', `/Groups/${gid}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', path: 'members', value: [{ value: u }] }],
        });
      const add = add2();
      const added = await withinMs(add, 5_000);
      expect(added === 'timeout' ? 'timeout' : added.status).toBe(200);
      // Okta's removal (a filter naming the member) does not wait either.
      const remove = c('PATCH', `/Groups/${gid}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'remove', path: `members[value eq "${u}"]` }],
      });
      const removedNow = await withinMs(remove, 5_000);
      expect(removedNow === 'timeout' ? 'timeout' : removedNow.status).toBe(200);
      const readd = await withinMs(add2(), 5_000);
      expect(readd === 'timeout' ? 'timeout' : readd.status).toBe(200);
      const rename = c('PATCH', `/Groups/${gid}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'displayName', value: 'renamed' }],
      });
      expect(await withinMs(rename, 500)).toBe('timeout');
      await holder.query('commit');
      expect((await rename).status).toBe(200);
    } finally {
      await holder.end();
    }
    expect(await memberIds(s, dir.id, gid)).toEqual([u]);
  });

  it('loses no member and emits one event per change when adds and removes of one group race', async () => {
    const users = await Promise.all(
      Array.from(
        { length: 12 },
        async (_, i) => (await c('POST', '/Users', userBody(`racer-${i}@example.com`))).body.id as string,
      ),
    );
    const gid = await group('racing');
    const before = (await storedEvents(s, dir.id)).length;
    // Each user added twice at once (in different company), the first four then removed.
    const add = (ids: string[]) =>
      c('PATCH', `/Groups/${gid}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'add', path: 'members', value: ids.map((value) => ({ value })) }],
      });
    const adds = await Promise.all([
      ...users.map((u) => add([u])),
      ...users.map((u, i) => add([u, users[(i + 5) % users.length] as string])),
    ]);
    expect(adds.map((r) => r.status)).toEqual(adds.map(() => 200));
    const removed = users.slice(0, 4);
    // Removed at once, two by value and two as Okta does (a `members[value eq "…"]` path).
    const removes = await Promise.all(
      removed.map((u, i) =>
        c('PATCH', `/Groups/${gid}`, {
          schemas: [PATCH_OP],
          Operations: [
            i % 2
              ? { op: 'remove', path: `members[value eq "${u}"]` }
              : { op: 'remove', path: 'members', value: [{ value: u }] },
          ],
        }),
      ),
    );
    expect(removes.map((r) => r.status)).toEqual(removes.map(() => 200));
    expect((await memberIds(s, dir.id, gid)).sort()).toEqual(users.slice(4).sort());
    const events = (await storedEvents(s, dir.id)).slice(before);
    const addedEvents = events.filter((e) => e.event === 'group.user_added').map((e) => (e.data as { id: string }).id);
    const removedEvents = events
      .filter((e) => e.event === 'group.user_removed')
      .map((e) => (e.data as { id: string }).id);
    expect(addedEvents.sort()).toEqual([...users].sort());
    expect(removedEvents.sort()).toEqual([...removed].sort());
    // Sequence numbers stay gap-free.
    const seqs = (await storedEvents(s, dir.id)).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });
});
