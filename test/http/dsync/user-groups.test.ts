/**
 * Memberships from `User.groups` (ory/polis#3136): identity providers that manage memberships from
 * the user send `groups: [{value}]` on POST and PUT /Users; gatehouse makes them memberships, with
 * the events a Group PATCH would make.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord, DirectorySyncEvent } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, withStoredEvents } from '../../helpers/dsync.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

async function setup() {
  const dir: DirectoryRecord = await createDirectory(s);
  const c = scimClient(s, dir);
  const g1 = (await c('POST', '/Groups', { displayName: 'One' })).body.id as string;
  const g2 = (await c('POST', '/Groups', { displayName: 'Two' })).body.id as string;
  return { dir, c, g1, g2 };
}

async function groupsOf(userId: string): Promise<string[]> {
  const { rows } = await sql<{ group_id: string }>`
    select group_id from dsync_group_members where user_id = ${userId} order by group_id`.execute(s.container.db);
  return rows.map((r) => r.group_id);
}

const summary = (events: DirectorySyncEvent[]) =>
  events.map((e) => [e.event, ((e.data as { group?: { id?: string } }).group?.id ?? null) as string | null]);

describe('User.groups', () => {
  it('POST /Users: the listed groups that exist get the user, after user.created', async () => {
    const { dir, c, g1 } = await setup();
    const { value: r, events } = await withStoredEvents(s, dir.id, () =>
      c('POST', '/Users', { userName: 'in.groups@example.com', groups: [{ value: g1 }, { value: 'no-such-group' }] }),
    );
    expect(r.status).toBe(201);
    expect(await groupsOf(r.body.id)).toEqual([g1]);
    expect(summary(events)).toEqual([
      ['user.created', null],
      ['group.user_added', g1],
    ]);
    expect(events[1]?.data).toMatchObject({ id: r.body.id, email: 'in.groups@example.com' });
    // The library's groups.get lists the member (SCIM's GET /Groups answers members: [], as Jackson).
    const lib = s.container.dsync.controller().groups.setTenantAndProduct(dir.tenant, dir.product);
    expect((await lib.get(g1)).data?.members.map((m) => m.user_id)).toEqual([r.body.id]);
  });

  it('PUT /Users with groups joins the listed groups, and never leaves one for missing from the list (Okta sends groups: [])', async () => {
    const { dir, c, g1, g2 } = await setup();
    const u = (await c('POST', '/Users', { userName: 'moves@example.com', groups: [{ value: g1 }] })).body;
    const joined = await withStoredEvents(s, dir.id, () =>
      c('PUT', `/Users/${u.id}`, { userName: 'moves@example.com', groups: [{ value: g2 }, { value: g1 }] }),
    );
    expect(joined.value.status).toBe(200);
    expect(await groupsOf(u.id)).toEqual([g1, g2].sort());
    expect(summary(joined.events)).toEqual([
      ['user.updated', null],
      ['group.user_added', g2],
    ]);
    // Okta's PUT: the whole user with groups: [] — memberships stay, one event.
    for (const body of [
      { userName: 'moves@example.com', groups: [] },
      { userName: 'moves@example.com', name: { givenName: 'M' } },
      { userName: 'moves@example.com', groups: [{ value: g2 }] },
    ]) {
      const kept = await withStoredEvents(s, dir.id, () => c('PUT', `/Users/${u.id}`, body));
      expect(summary(kept.events)).toEqual([['user.updated', null]]);
      expect(await groupsOf(u.id)).toEqual([g1, g2].sort());
    }
    // Leaving a group is a Group write.
    await c('PATCH', `/Groups/${g1}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'remove', path: `members[value eq "${u.id}"]` }],
    });
    expect(await groupsOf(u.id)).toEqual([g2]);
  });

  it('a group that already named the user (a pending member) is joined once, with one event', async () => {
    const { dir, c } = await setup();
    const id = '00000000-0000-4000-8000-00000000beef';
    const g = (await c('POST', '/Groups', { displayName: 'Early', members: [{ value: id }] })).body.id as string;
    const { value: r, events } = await withStoredEvents(s, dir.id, () =>
      c('POST', '/Users', { userId: id, userName: 'early@example.com', groups: [{ value: g }] }),
    );
    expect(r.status).toBe(201);
    expect(r.body.id).toBe(id);
    expect(summary(events)).toEqual([
      ['user.created', null],
      ['group.user_added', g],
    ]);
    expect(await groupsOf(id)).toEqual([g]);
  });
});
