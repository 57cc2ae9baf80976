/**
 * Google Workspace sync (after Jackson npm/test/dsync/google_api.test.ts)
 * against a fake Directory API on loopback: Jackson's five scenarios with exactly their events,
 * the Directory API calls and their parameters, paging, nested groups and outside users, volatile
 * fields, an email swap, logs. Failures and tokens: google-resilience.test.ts.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord, DirectorySyncEvent } from '../../../src/dsync/types.ts';
import { LogCapture, type TestServer } from '../../helpers/apps.ts';
import { jacksonEvent, snapshot, startDsyncServer, storedEvents, v1 } from '../../helpers/dsync.ts';
import {
  type FakeGoogle,
  type GGroup,
  type GUser,
  googleConfig,
  googleGroup,
  googleMember,
  googleUser,
  startFakeGoogle,
} from '../../helpers/fake-google.ts';
import { googleHarness, groupRecord, member, summary, userRecord } from '../../helpers/google-harness.ts';

let fake: FakeGoogle;
let s: TestServer;
const logs = new LogCapture();

beforeAll(async () => {
  fake = await startFakeGoogle();
  s = await startDsyncServer(googleConfig(fake), { log: logs.logger('info') });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const { ctl, authorizedDirectory, workspace, sync } = googleHarness(
  () => s,
  () => fake,
);

describe('Jackson’s five sync scenarios (450 users over 3 pages, 2 groups)', () => {
  let d: DirectoryRecord;
  let ws: ReturnType<typeof workspace>;
  beforeAll(async () => {
    ws = workspace(450);
    d = await authorizedDirectory();
  });

  it('sync 1: every user, then the groups, then the USER memberships, committed and called back in order', async () => {
    const apiBefore = fake.apiCalls().length;
    const received: DirectorySyncEvent[] = [];
    // Jackson's `sync(callback)`: every authorized Google directory (only this one so far).
    const r = await ctl().sync((e) => {
      received.push(e);
    });
    expect(r.error).toBeNull();
    expect(r.data?.map((x) => [x.directoryId, x.status])).toEqual([[d.id, 'completed']]);
    const events = (await storedEvents(s, d.id)).map(({ seq: _seq, ...e }) => e);
    expect(received.map(jacksonEvent)).toEqual(events);
    expect(summary(events)).toEqual([
      ...ws.users.map((u) => `user.created ${u.id}`),
      `group.created ${ws.eng.id}`,
      `group.created ${ws.sales.id}`,
      `group.user_added ${ws.eng.id}:${ws.users[0]?.id}`,
      `group.user_added ${ws.eng.id}:${ws.users[1]?.id}`,
      `group.user_added ${ws.sales.id}:${ws.users[0]?.id}`,
    ]);
    const base = { tenant: 'acme', product: 'crm', directory_id: d.id };
    expect(events[0]).toEqual({ event: 'user.created', ...base, data: userRecord(ws.users[0] as GUser) });
    expect(events[450]).toEqual({ event: 'group.created', ...base, data: groupRecord(ws.eng) });
    expect(events[452]).toEqual({
      event: 'group.user_added',
      ...base,
      data: { ...userRecord(ws.users[0] as GUser), group: groupRecord(ws.eng) },
    });
    // Directory API list calls: customer=my_customer and maxResults=200 on users and groups, pageToken to page on; maxResults on members.
    const calls = fake.apiCalls().slice(apiBefore);
    expect(calls.filter((c) => c.path.endsWith('/users')).map((c) => c.query)).toEqual([
      { customer: 'my_customer', maxResults: '200' },
      { customer: 'my_customer', maxResults: '200', pageToken: expect.any(String) },
      { customer: 'my_customer', maxResults: '200', pageToken: expect.any(String) },
    ]);
    expect(calls.filter((c) => c.path.endsWith('/groups')).map((c) => c.query)).toEqual([
      { customer: 'my_customer', maxResults: '200' },
    ]);
    expect(calls.filter((c) => c.path.endsWith('/members')).map((c) => [c.path, c.query])).toEqual([
      [`/admin/directory/v1/groups/${ws.eng.id}/members`, { maxResults: '200' }],
      [`/admin/directory/v1/groups/${ws.sales.id}/members`, { maxResults: '200' }],
    ]);
    expect(r.data?.[0]?.counts).toMatchObject({
      pages: 6,
      users: { created: 450, updated: 0, deleted: 0, skipped: 0 },
      groups: { created: 2, updated: 0, deleted: 0, skipped: 0 },
      memberships: { added: 3, removed: 0, notUsers: 2, unknownUsers: 1 },
      events: 455,
    });
    const stored = (await v1(s)('GET', `/${d.id}`)).body.data;
    expect(stored.google_domain).toBe('acme.test');
    const users = await v1(s)('GET', `/users?directoryId=${d.id}&pageLimit=1`);
    expect(users.body.data[0]).toMatchObject({
      directoryId: d.id,
      raw: expect.objectContaining({ kind: 'admin#directory#user' }),
    });
    // The nested group and the customer are no members.
    const members = await v1(s)('GET', `/groups/${ws.eng.id}/members?directoryId=${d.id}`);
    expect(members.body.data.map((m: { user_id: string }) => m.user_id).sort()).toEqual(
      [ws.users[0]?.id, ws.users[1]?.id].sort(),
    );
  });

  it('sync 2: a renamed user and a renamed group; volatile fields (etag, lastLoginTime, photo etag) change nothing', async () => {
    const [u1, , , , , u6] = ws.users as GUser[];
    (u1 as GUser).name = { givenName: 'Renamed', familyName: 'Last1', fullName: 'Renamed Last1' };
    (u1 as GUser).etag = '"changed"';
    Object.assign(u6 as GUser, { etag: '"e2"', lastLoginTime: '2026-03-01T00:00:00.000Z', thumbnailPhotoEtag: '"p2"' });
    Object.assign(ws.eng, { name: 'Engineering Team', etag: '"g2"' });
    ws.sales.etag = '"g3"';
    const { result, events } = await sync(d.id);
    expect(result.status).toBe('completed');
    expect(summary(events)).toEqual([`user.updated ${u1?.id}`, `group.updated ${ws.eng.id}`]);
    expect(events[0]?.data).toMatchObject({ first_name: 'Renamed' });
    expect(events[1]?.data).toMatchObject({ name: 'Engineering Team' });
  });

  it('sync 3: the last user and the last group removed (its memberships go without user_removed)', async () => {
    const last = ws.users.pop() as GUser;
    fake.groups = [ws.eng];
    fake.members.delete(ws.sales.id);
    const { result, events } = await sync(d.id);
    expect(result.status).toBe('completed');
    expect(summary(events)).toEqual([`user.deleted ${last.id}`, `group.deleted ${ws.sales.id}`]);
    expect(events[0]?.data).toEqual(userRecord(last));
    const { rows } = await sql`select 1 from dsync_group_members where group_id = ${ws.sales.id}`.execute(
      s.container.db,
    );
    expect(rows).toHaveLength(0);
  });

  it('sync 4: a new user and a new group that contains him', async () => {
    const jackson = googleUser(1000, 'acme.test', { primaryEmail: 'jackson@acme.test' });
    const marketing = googleGroup('marketing', 'Marketing');
    ws.users.push(jackson);
    fake.groups.push(marketing);
    fake.members.set(marketing.id, [member(jackson)]);
    const { events } = await sync(d.id);
    expect(summary(events)).toEqual([
      `user.created ${jackson.id}`,
      `group.created ${marketing.id}`,
      `group.user_added ${marketing.id}:${jackson.id}`,
    ]);
    expect(events[0]?.data).toMatchObject({ email: 'jackson@acme.test' });
  });

  it('sync 5: a user moved from one group to another', async () => {
    const u1 = ws.users[0] as GUser;
    const marketing = fake.groups[1] as GGroup;
    fake.members.set(
      ws.eng.id,
      (fake.members.get(ws.eng.id) ?? []).filter((m) => m.id !== u1.id),
    );
    fake.members.get(marketing.id)?.push(member(u1));
    const { events } = await sync(d.id);
    expect(summary(events)).toEqual([
      `group.user_removed ${ws.eng.id}:${u1.id}`,
      `group.user_added ${marketing.id}:${u1.id}`,
    ]);
  });

  it('an unchanged workspace produces no event and no write', async () => {
    const before = await snapshot(s, d.id);
    const { result, events } = await sync(d.id);
    expect(result.status).toBe('completed');
    expect(events).toEqual([]);
    expect(await snapshot(s, d.id)).toBe(before);
  });

  it('two users swapping their primary emails are both updated', async () => {
    const [a, b] = ws.users as GUser[];
    const [ea, eb] = [a?.primaryEmail, b?.primaryEmail];
    Object.assign(a as GUser, { primaryEmail: eb });
    Object.assign(b as GUser, { primaryEmail: ea });
    const { result, events } = await sync(d.id);
    expect(result.counts.users).toMatchObject({ updated: 2, skipped: 0 });
    expect(summary(events).sort()).toEqual([`user.updated ${a?.id}`, `user.updated ${b?.id}`].sort());
    const { rows } = await sql<{ id: string; user_name: string; email: string }>`
      select id, user_name, email from dsync_users where directory_id = ${d.id} and id in (${a?.id}, ${b?.id})`.execute(
      s.container.db,
    );
    expect(Object.fromEntries(rows.map((r) => [r.id, [r.user_name, r.email]]))).toEqual({
      [a?.id as string]: [eb, eb],
      [b?.id as string]: [ea, ea],
    });
  });

  it('logs the run with its counts, and never a token', async () => {
    const done = logs.entries().filter((e) => e.msg === 'google sync completed' && e.directoryId === d.id);
    expect(done.length).toBeGreaterThanOrEqual(6);
    expect(done[0]).toMatchObject({ users: { created: 450 }, groups: { created: 2 }, events: 455 });
    expect(logs.entries().some((e) => e.msg === 'google sync progress')).toBe(true);
    const text = logs.lines.join('\n');
    for (const t of [...fake.accessTokens, ...fake.refreshTokens]) expect(text).not.toContain(t);
  });
});

describe('paging', () => {
  it('follows nextPageToken through groups (205: 2 pages) and members (450: 3 pages)', async () => {
    const users = Array.from({ length: 450 }, (_, i) => googleUser(5000 + i));
    const all = googleGroup('all', 'Everyone');
    const small = Array.from({ length: 204 }, (_, i) => googleGroup(`team${i}`, `Team ${i}`));
    fake.users = users;
    fake.groups = [all, ...small];
    fake.members = new Map([[all.id, users.map(member)]]);
    const d = await authorizedDirectory({ product: 'paging' });
    const apiBefore = fake.apiCalls().length;
    const { result, events } = await sync(d.id);
    expect(result.status).toBe('completed');
    const calls = fake.apiCalls().slice(apiBefore);
    expect(calls.filter((c) => c.path.endsWith('/users'))).toHaveLength(3);
    expect(calls.filter((c) => c.path.endsWith('/groups'))).toHaveLength(2);
    expect(calls.filter((c) => c.path === `/admin/directory/v1/groups/${all.id}/members`)).toHaveLength(3);
    expect(summary(events)).toEqual([
      ...users.map((u) => `user.created ${u.id}`),
      ...[all, ...small].map((g) => `group.created ${g.id}`),
      ...users.map((u) => `group.user_added ${all.id}:${u.id}`),
    ]);
  });
});

describe('chosen groups (google_groups)', () => {
  it('syncs only the chosen groups, their USER members and memberships; the rest goes when the choice narrows', async () => {
    const users = Array.from({ length: 6 }, (_, i) => googleUser(7000 + i));
    const eng = googleGroup('eng-chosen', 'Engineering');
    const sales = googleGroup('sales-chosen', 'Sales');
    const hr = googleGroup('hr-not-chosen', 'HR');
    const [u0, u1, u2, u3, u4] = users as [GUser, GUser, GUser, GUser, GUser];
    fake.users = users;
    fake.groups = [eng, sales, hr];
    fake.members = new Map([
      [eng.id, [member(u0), member(u1), googleMember(hr.id, 'GROUP')]],
      [sales.id, [member(u1), member(u2)]],
      [hr.id, [member(u3), member(u4)]],
    ]);
    // Chosen by email (any case) and by id; one that does not exist at Google is ignored.
    const d = await authorizedDirectory({
      product: 'chosen',
      google_groups: ['ENG-CHOSEN@acme.test', sales.id, 'nope@acme.test'],
    });
    expect(d.google_groups).toEqual(['ENG-CHOSEN@acme.test', sales.id, 'nope@acme.test']);
    const first = await sync(d.id);
    expect(first.result.status).toBe('completed');
    expect(summary(first.events)).toEqual([
      `user.created ${u0.id}`,
      `user.created ${u1.id}`,
      `user.created ${u2.id}`,
      `group.created ${eng.id}`,
      `group.created ${sales.id}`,
      `group.user_added ${eng.id}:${u0.id}`,
      `group.user_added ${eng.id}:${u1.id}`,
      `group.user_added ${sales.id}:${u1.id}`,
      `group.user_added ${sales.id}:${u2.id}`,
    ]);

    // Narrowed to Sales through the management API: Engineering and the users only it had go.
    const narrowed = await v1(s)('PATCH', `/${d.id}`, { google_groups: [sales.email as string] });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.data.google_groups).toEqual([sales.email]);
    const second = await sync(d.id);
    expect(summary(second.events).sort()).toEqual([`user.deleted ${u0.id}`, `group.deleted ${eng.id}`].sort());

    // Back to every group: everyone arrives.
    await v1(s)('PATCH', `/${d.id}`, { google_groups: [] });
    const third = await sync(d.id);
    const added = summary(third.events);
    for (const u of users.filter((x) => x.id !== u1.id && x.id !== u2.id))
      expect(added).toContain(`user.created ${u.id}`);
    expect(added).toContain(`group.created ${hr.id}`);
    expect(added).toContain(`group.user_added ${hr.id}:${u3.id}`);

    // Refused: not a list of strings, too many, empty names.
    for (const google_groups of ['eng', [''], [42], Array.from({ length: 501 }, (_, i) => `g${i}`)]) {
      const bad = await v1(s)('PATCH', `/${d.id}`, { google_groups });
      expect(bad.status, JSON.stringify(google_groups).slice(0, 40)).toBe(400);
    }
  });
});
