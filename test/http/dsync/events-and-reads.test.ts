/**
 * Events written with each change (types, payloads, key order; stored in
 * the change's transaction with a per-directory sequence) and the v1 read routes for users, groups,
 * members and events.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, storedEvents, v1 } from '../../helpers/dsync.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

const USER_KEYS = ['id', 'first_name', 'last_name', 'email', 'active', 'raw'];

describe('events', () => {
  it('cover the eight types with Jackson’s payloads and key order', async () => {
    const d = await createDirectory(s, { tenant: 'ev', product: 'p' });
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'e@example.com', name: { givenName: 'E', familyName: 'V' } }))
      .body;
    await c('PUT', `/Users/${u.id}`, { userName: 'e@example.com', roles: ['r'] });
    const g = (await c('POST', '/Groups', { displayName: 'G' })).body;
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'add', path: 'members', value: [{ value: u.id }] }] });
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'replace', path: 'displayName', value: 'G2' }] });
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'remove', path: 'members' }] });
    await c('DELETE', `/Groups/${g.id}`);
    await c('DELETE', `/Users/${u.id}`);
    const events = await storedEvents(s, d.id);
    expect(events.map((e) => e.event)).toEqual([
      'user.created',
      'user.updated',
      'group.created',
      'group.user_added',
      'group.updated',
      'group.user_removed',
      'group.deleted',
      'user.deleted',
    ]);
    for (const { seq: _seq, ...e } of events) {
      expect(Object.keys(e)).toEqual(['event', 'tenant', 'product', 'directory_id', 'data']);
      expect(e).toMatchObject({ tenant: 'ev', product: 'p', directory_id: d.id });
    }
    const [created, updated, groupCreated, added] = events;
    expect(Object.keys(created?.data ?? {})).toEqual(USER_KEYS);
    expect(Object.keys(updated?.data ?? {})).toEqual([
      'id',
      'first_name',
      'last_name',
      'email',
      'active',
      'roles',
      'raw',
    ]);
    expect(Object.keys(groupCreated?.data ?? {})).toEqual(['id', 'name', 'raw']);
    expect(Object.keys(added?.data ?? {})).toEqual([
      'id',
      'first_name',
      'last_name',
      'email',
      'active',
      'roles',
      'raw',
      'group',
    ]);
    expect(added?.data).toMatchObject({ id: u.id, group: { id: g.id, name: 'G', raw: { displayName: 'G' } } });
    expect(events[4]?.data).toMatchObject({ id: g.id, name: 'G2' });
    expect(events[5]?.data).toMatchObject({ id: u.id, group: { name: 'G2' } });
  });

  it('are numbered per directory without gaps under concurrent writes, with ids and timestamps', async () => {
    const a = await createDirectory(s);
    const b = await createDirectory(s);
    const write = (d: typeof a, i: number) => scimClient(s, d)('POST', '/Users', { userName: `c${i}@example.com` });
    const replies = await Promise.all(Array.from({ length: 24 }, (_v, i) => write(i % 2 ? a : b, i)));
    expect(replies.every((r) => r.status === 201)).toBe(true);
    for (const d of [a, b]) {
      const { rows } = await sql<{ id: string; seq: number; created_at: Date }>`
        select id, seq, created_at from dsync_events where directory_id = ${d.id} order by seq`.execute(s.container.db);
      expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 12 }, (_v, i) => i + 1));
      expect(new Set(rows.map((r) => r.id)).size).toBe(12);
      for (const r of rows) expect(r.created_at).toBeInstanceOf(Date);
    }
  });

  it('are not written for a request that fails', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'f@example.com' })).body;
    await c('POST', '/Users', { userName: 'f@example.com' });
    await c('PATCH', `/Users/${u.id}`, { Operations: [{ op: 'replace', path: 'title', value: 'x' }, { op: 'nope' }] });
    expect((await storedEvents(s, d.id)).map((e) => e.event)).toEqual(['user.created']);
    expect((await c('GET', `/Users/${u.id}`)).body).not.toHaveProperty('title');
  });
});

describe('v1 reads', () => {
  it('list and get users by tenant+product or by directoryId', async () => {
    const d = await createDirectory(s, { tenant: 'reads', product: 'p' });
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'r1@example.com' })).body;
    const api = v1(s);
    const byPair = await api('GET', '/users?tenant=reads&product=p');
    expect(byPair.body).toEqual({
      data: [
        { id: u.id, first_name: '', last_name: '', email: 'r1@example.com', active: true, directoryId: d.id, raw: u },
      ],
      error: null,
    });
    expect((await api('GET', `/users?directoryId=${d.id}&limit=1`)).body.data).toHaveLength(1);
    expect((await api('GET', `/users/${u.id}?directoryId=${d.id}`)).body).toEqual({ data: byPair.body.data[0] });
    expect((await api('GET', `/users/nope?directoryId=${d.id}`)).body).toEqual({
      error: { message: 'User not found', code: 404 },
    });
    const unknown = await api('GET', '/users?directoryId=00000000-0000-4000-8000-0000000000ff');
    expect(unknown).toMatchObject({ status: 404, body: { error: { message: 'Directory not found.' } } });
    expect((await api('GET', '/users')).status).toBe(400);
    expect((await api('POST', '/users', {})).status).toBe(405);
  });

  it('list and get groups, and page their members', async () => {
    const d = await createDirectory(s, { tenant: 'greads', product: 'p' });
    const c = scimClient(s, d);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await c('POST', '/Users', { userName: `g${i}@example.com` })).body.id);
    const g = (await c('POST', '/Groups', { displayName: 'Readers', members: ids.map((value) => ({ value })) })).body;
    const api = v1(s);
    expect((await api('GET', '/groups?tenant=greads&product=p')).body).toEqual({
      data: [{ id: g.id, name: 'Readers', raw: { displayName: 'Readers', members: [], id: g.id } }],
      error: null,
    });
    const one = await api('GET', `/groups/${g.id}?directoryId=${d.id}`);
    expect(one.body.data.members).toHaveLength(3);
    const p1 = await api('GET', `/groups/${g.id}/members?directoryId=${d.id}&pageOffset=0&pageLimit=2`);
    const p2 = await api('GET', `/groups/${g.id}/members?directoryId=${d.id}&offset=2&limit=2`);
    expect([...p1.body.data, ...p2.body.data].map((m: { user_id: string }) => m.user_id).sort()).toEqual(
      [...ids].sort(),
    );
    expect(Object.keys(p1.body)).toEqual(['data']);
    expect((await api('GET', `/groups/nope?directoryId=${d.id}`)).body).toEqual({
      error: { message: 'Group with id nope not found.', code: 404 },
    });
  });

  it('events (webhook logs) answer Jackson’s empty shapes when nothing was logged', async () => {
    const d = await createDirectory(s);
    const api = v1(s);
    expect((await api('GET', `/events?directoryId=${d.id}`)).body).toEqual({ data: [] });
    expect((await api('GET', `/events/some-id?directoryId=${d.id}`)).body).toEqual({ data: null });
    expect((await api('DELETE', `/events?directoryId=${d.id}`)).body).toEqual({ data: null });
    const missing = await api('DELETE', '/events?directoryId=00000000-0000-4000-8000-0000000000ee');
    expect(missing).toMatchObject({
      status: 404,
      body: { error: { message: 'Directory configuration not found.', code: 404 } },
    });
  });
});
