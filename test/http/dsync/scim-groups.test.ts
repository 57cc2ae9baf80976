/**
 * SCIM `/Groups` and memberships over HTTP (Jackson npm/test/dsync/{groups,membership}.test.ts and
 * e2e/api/scim/v2.0/groups.spec.ts; RFC 7644 §3).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, memberIds, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';

const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

let s: TestServer;
let dir: DirectoryRecord;
let c: ReturnType<typeof scimClient>;
let group: { id: string; displayName: string };
let u1: string;
let u2: string;

beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});
beforeEach(async () => {
  dir = await createDirectory(s);
  c = scimClient(s, dir);
  const r = await c('POST', '/Groups', { schemas: [GROUP], displayName: 'Developers', members: [] });
  expect(r.status).toBe(201);
  group = r.body;
  u1 = (await c('POST', '/Users', { userName: 'u1@example.com', name: { givenName: 'U', familyName: 'One' } })).body.id;
  u2 = (await c('POST', '/Users', { userName: 'u2@example.com' })).body.id;
});

const patch = (Operations: unknown[]) => c('PATCH', `/Groups/${group.id}`, { schemas: [PATCH_OP], Operations });
const eventsAfter = async (n: number) => (await storedEvents(s, dir.id)).slice(n);
const count = async () => (await storedEvents(s, dir.id)).length;

describe('group resources', () => {
  it('answers POST with 201 and Jackson’s body, and 409 to the same displayName', async () => {
    expect(group).toEqual({ schemas: [GROUP], id: group.id, displayName: 'Developers', members: [] });
    const r = await c('POST', '/Groups', { schemas: [GROUP], displayName: 'developers' });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ detail: 'Group already exists', status: '409', scimType: 'uniqueness' });
  });

  it('gets a group by id, and 404s an unknown one', async () => {
    expect((await c('GET', `/Groups/${group.id}`)).body).toEqual(group);
    expect((await c('GET', '/Groups/nope')).body).toMatchObject({ detail: 'Group not found', status: '404' });
  });

  it('filters by displayName and lists with Jackson’s key order', async () => {
    const r = await c('GET', '/Groups?filter=displayName eq "Developers"');
    expect(Object.keys(r.body)).toEqual(['schemas', 'totalResults', 'itemsPerPage', 'startIndex', 'Resources']);
    expect(r.body).toEqual({
      schemas: [LIST],
      totalResults: 1,
      itemsPerPage: 1,
      startIndex: 1,
      Resources: [{ schemas: [GROUP], displayName: 'Developers', members: [], id: group.id }],
    });
    const all = await c('GET', '/Groups');
    expect(all.body).toMatchObject({ totalResults: 1, Resources: [{ members: [] }] });
  });

  it('renames with PATCH replace value {id, displayName} and writes group.updated', async () => {
    const r = await patch([{ op: 'replace', value: { id: group.id, displayName: 'Designers' } }]);
    expect(r.body).toEqual({ ...group, displayName: 'Designers' });
    const [e] = await eventsAfter((await count()) - 1);
    expect(e).toMatchObject({
      event: 'group.updated',
      data: { id: group.id, name: 'Designers', raw: { displayName: 'Designers' } },
    });
  });

  it('replaces with PUT', async () => {
    const r = await c('PUT', `/Groups/${group.id}`, {
      schemas: [GROUP],
      displayName: 'Developers 2',
      externalId: 'x1',
    });
    expect(r.body).toEqual({ ...group, displayName: 'Developers 2' });
    expect((await c('GET', '/Groups?filter=externalId eq "x1"')).body.totalResults).toBe(1);
  });

  it('deletes with 200 {} and group.deleted only; the group is then 404', async () => {
    await patch([{ op: 'add', path: 'members', value: [{ value: u1 }] }]);
    const before = await count();
    const r = await c('DELETE', `/Groups/${group.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({});
    expect((await eventsAfter(before)).map((e) => e.event)).toEqual(['group.deleted']);
    expect((await c('GET', `/Groups/${group.id}`)).status).toBe(404);
  });
});

describe('memberships', () => {
  it('adds a member: group.user_added with the user and the group', async () => {
    const before = await count();
    const r = await patch([{ op: 'add', path: 'members', value: [{ value: u1, display: 'u1@example.com' }] }]);
    expect(r.body).toEqual(group);
    const [e] = await eventsAfter(before);
    expect(e).toMatchObject({
      event: 'group.user_added',
      data: {
        id: u1,
        first_name: 'U',
        last_name: 'One',
        email: 'u1@example.com',
        group: { id: group.id, name: 'Developers' },
      },
    });
    expect(await memberIds(s, dir.id, group.id)).toEqual([u1]);
  });

  it('removes a member with members[value eq "…"]', async () => {
    await patch([{ op: 'add', path: 'members', value: [{ value: u1 }] }]);
    const before = await count();
    await patch([{ op: 'remove', path: `members[value eq "${u1}"]` }]);
    expect((await eventsAfter(before)).map((e) => [e.event, (e.data as { id: string }).id])).toEqual([
      ['group.user_removed', u1],
    ]);
    expect(await memberIds(s, dir.id, group.id)).toEqual([]);
  });

  it('adds two in one operation and removes two with a value array', async () => {
    await patch([{ op: 'add', path: 'members', value: [{ value: u1 }, { value: u2 }] }]);
    expect(await memberIds(s, dir.id, group.id)).toEqual([u1, u2].sort());
    await patch([{ op: 'remove', path: 'members', value: [{ value: u1 }, { value: u2 }] }]);
    expect(await memberIds(s, dir.id, group.id)).toEqual([]);
  });

  it('stores the members sent with POST and PUT (Jackson discarded them)', async () => {
    const g = (await c('POST', '/Groups', { displayName: 'With members', members: [{ value: u1 }, { value: u2 }] }))
      .body;
    expect(g.members).toEqual([]);
    expect(await memberIds(s, dir.id, g.id)).toEqual([u1, u2].sort());
    await c('PUT', `/Groups/${g.id}`, { displayName: 'With members', members: [{ value: u2 }] });
    expect(await memberIds(s, dir.id, g.id)).toEqual([u2]);
    await c('PUT', `/Groups/${g.id}`, { displayName: 'Renamed only' });
    expect(await memberIds(s, dir.id, g.id)).toEqual([u2]);
  });

  it('finds groups by member', async () => {
    await patch([{ op: 'add', path: 'members', value: [{ value: u1 }] }]);
    for (const f of [`members[value eq "${u1}"]`, `members eq "${u1}"`, `members.value eq "${u1}"`]) {
      expect((await c('GET', `/Groups?filter=${encodeURIComponent(f)}`)).body.totalResults).toBe(1);
    }
    expect((await c('GET', `/Groups?filter=${encodeURIComponent(`members eq "${u2}"`)}`)).body.totalResults).toBe(0);
  });

  it('refuses a member without a value', async () => {
    const r = await patch([{ op: 'add', path: 'members', value: [{ display: 'x' }] }]);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ scimType: 'invalidValue' });
  });
});
