/**
 * SCIM writes of one directory run side by side: the directory row is locked only from the events'
 * sequence numbers to the commit. What the per-directory lock guaranteed still holds: sequence
 * numbers gap-free and in commit order, no event for a write that rolled back, no duplicate
 * userName/email from concurrent creates, no lost update of one resource.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, memberIds, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';

const userBody = (name: string, email = name) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: name,
  name: { givenName: 'G', familyName: 'F' },
  emails: [{ primary: true, value: email, type: 'work' }],
  active: true,
});

let s: TestServer;
beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

const withinMs = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);

describe('concurrent SCIM writes in one directory', () => {
  let dir: DirectoryRecord;
  let c: ReturnType<typeof scimClient>;
  beforeAll(async () => {
    dir = await createDirectory(s);
    c = scimClient(s, dir);
  });

  it('does not make a write wait for another write of the same directory that is still running', async () => {
    const a = await c('POST', '/Users', userBody('slow@example.com'));
    expect(a.status).toBe(201);
    // Another write of user A is in progress (it holds A's row) and does not finish for now.
    const held = new pg.Client({ connectionString: s.database.url });
    await held.connect();
    try {
      await held.query('begin');
      await held.query('select 1 from dsync_users where id = $1 for update', [a.body.id]);
      const patchA = c('PATCH', `/Users/${a.body.id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', value: { active: false } }],
      });
      // A create of another user completes meanwhile (it used to queue behind the directory lock).
      const b = await withinMs(c('POST', '/Users', userBody('fast@example.com')), 5000);
      expect(b).not.toBe('timeout');
      expect((b as { status: number }).status).toBe(201);
      expect(await withinMs(patchA, 300)).toBe('timeout'); // A's write still waits for A
      await held.query('commit');
      expect((await patchA).status).toBe(200);
    } finally {
      await held.end();
    }
    // Sequence numbers follow commit order: B's create committed before A's update.
    const events = await storedEvents(s, dir.id);
    const tail = events.slice(-2).map((e) => [e.event, (e.data as { email?: string }).email]);
    expect(tail).toEqual([
      ['user.created', 'fast@example.com'],
      ['user.updated', 'slow@example.com'],
    ]);
  });

  it('keeps sequence numbers gap-free and unique, with no event for writes that failed', async () => {
    const before = (await storedEvents(s, dir.id)).length;
    const names = Array.from({ length: 24 }, (_, i) => `burst-${i % 12}@example.com`); // each name twice
    const replies = await Promise.all(names.map((n) => c('POST', '/Users', userBody(n))));
    const created = replies.filter((r) => r.status === 201);
    expect(created).toHaveLength(12);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(12);
    const events = await storedEvents(s, dir.id);
    expect(events).toHaveLength(before + 12);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it('never creates two users with the same email under different userNames at once', async () => {
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        c('POST', '/Users', userBody(`name-${i}@example.com`, 'shared@example.com')),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(9);
  });

  it('loses no member when members of one group are added at once, and no update of one user', async () => {
    const users = await Promise.all(
      Array.from(
        { length: 10 },
        async (_, i) => (await c('POST', '/Users', userBody(`member-${i}@example.com`))).body.id as string,
      ),
    );
    const g = await c('POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'together',
      members: [],
    });
    expect(g.status).toBe(201);
    const patches = await Promise.all(
      users.map((id) =>
        c('PATCH', `/Groups/${g.body.id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'members', value: [{ value: id }] }],
        }),
      ),
    );
    expect(patches.map((r) => r.status)).toEqual(users.map(() => 200));
    expect((await memberIds(s, dir.id, g.body.id)).sort()).toEqual([...users].sort());
    // Ten PATCHes of one user, each adding its own attribute: all ten are kept.
    const target = users[0] as string;
    const attrs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        c('PATCH', `/Users/${target}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: `title${i}`, value: `t${i}` }],
        }),
      ),
    );
    expect(attrs.map((r) => r.status)).toEqual(attrs.map(() => 200));
    const got = await c('GET', `/Users/${target}`);
    for (let i = 0; i < 10; i++) expect(got.body[`title${i}`]).toBe(`t${i}`);
  });

  it('answers a write to a directory deactivated while it ran as a deactivated directory, and stores nothing', async () => {
    const d2 = await createDirectory(s);
    const c2 = scimClient(s, d2);
    const held = new pg.Client({ connectionString: s.database.url });
    await held.connect();
    try {
      // The deactivation holds the directory row until it commits; the create runs meanwhile.
      await held.query('begin');
      await held.query('update dsync_directories set deactivated = true where id = $1', [d2.id]);
      const create = c2('POST', '/Users', userBody('late@example.com'));
      expect(await withinMs(create, 300)).toBe('timeout');
      await held.query('commit');
      const r = await create;
      expect(r.status).toBe(200);
      expect(r.body).toEqual({});
    } finally {
      await held.end();
    }
    expect(await storedEvents(s, d2.id)).toEqual([]);
    const { rows } = await s.container.pool.query(
      'select count(*)::int as n from dsync_users where directory_id = $1',
      [d2.id],
    );
    expect(rows[0].n).toBe(0);
  });
});
