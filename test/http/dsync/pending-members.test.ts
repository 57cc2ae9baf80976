/**
 * Memberships are never dropped: a group PATCH/PUT (or POST) naming a member that is not (yet) a
 * user of the directory keeps it (the members listing returns it with its user_id, as Jackson's
 * does), `group.user_added` carries what is known, and the user's arrival resolves it with a
 * complete `group.user_added`. A member removed before it was ever known leaves nothing.
 */
import type { Controllers } from 'gatehouse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, libraryOn, scimClient, startDsyncServer, storedEvents, v1 } from '../../helpers/dsync.ts';

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

const members = async (directoryId: string, groupId: string) =>
  (await v1(s)('GET', `/groups/${groupId}/members?directoryId=${directoryId}`)).body.data as { user_id: string }[];

describe('memberships added before their users', () => {
  it('keeps them, lists them, emits what is known, and resolves them when the user appears', async () => {
    const d = await createDirectory(s, { tenant: 'pending', product: 'p' });
    const scim = scimClient(s, d);
    const g = (await scim('POST', '/Groups', { displayName: 'Early' })).body;
    const patch = await scim('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'add', path: 'members', value: [{ value: 'later-user' }] }],
    });
    expect(patch.status).toBe(200);
    expect(await members(d.id, g.id)).toEqual([{ user_id: 'later-user' }]);
    const added = (await storedEvents(s, d.id)).at(-1);
    expect(added).toMatchObject({
      event: 'group.user_added',
      data: { id: 'later-user', group: { id: g.id, name: 'Early' } },
    });
    expect(Object.keys(added?.data ?? {})).toEqual(['id', 'group']);

    // The user appears (an embedder's write with its id, or an identity provider's userId).
    const users = lib.directorySyncController.users.setTenantAndProduct('pending', 'p');
    const created = await users.create({
      directoryId: d.id,
      id: 'later-user',
      first_name: 'Late',
      last_name: 'Comer',
      email: 'late@example.com',
      raw: { userName: 'late@example.com' },
    });
    expect(created.error).toBeNull();
    const tail = (await storedEvents(s, d.id)).slice(-2);
    expect(tail.map((e) => e.event)).toEqual(['user.created', 'group.user_added']);
    expect(tail[1]?.data).toMatchObject({ id: 'later-user', email: 'late@example.com', group: { id: g.id } });
    expect(
      await lib.directorySyncController.groups.setTenantAndProduct('pending', 'p').isUserInGroup(g.id, 'later-user'),
    ).toBe(true);
    // Deleting the user removes its memberships (as before).
    await users.delete('later-user');
    expect(await members(d.id, g.id)).toEqual([]);
  });

  it('keeps members sent with PUT and POST; a member removed before it was known leaves nothing', async () => {
    const d = await createDirectory(s, { tenant: 'pending2', product: 'p' });
    const scim = scimClient(s, d);
    const g = (await scim('POST', '/Groups', { displayName: 'Put', members: [{ value: 'ghost-1' }] })).body;
    await scim('PUT', `/Groups/${g.id}`, { displayName: 'Put', members: [{ value: 'ghost-1' }, { value: 'ghost-2' }] });
    expect((await members(d.id, g.id)).map((m) => m.user_id).sort()).toEqual(['ghost-1', 'ghost-2']);
    const before = (await storedEvents(s, d.id)).length;
    await scim('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'remove', path: `members[value eq "ghost-1"]` }],
    });
    await scim('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'remove', path: 'members', value: [{ value: 'ghost-2' }] }],
    });
    expect(await members(d.id, g.id)).toEqual([]);
    // No user_removed for members that were never users; nothing left behind.
    expect((await storedEvents(s, d.id)).slice(before)).toEqual([]);
    const u = (await scim('POST', '/Users', { userName: 'ghost@example.com' })).body;
    expect((await storedEvents(s, d.id)).slice(before).map((e) => e.event)).toEqual(['user.created']);
    expect(u.id).toBeDefined();
  });
});
