/**
 * One test per quirk of Jackson 26.2.0, in the order of the "SCIM and data" table of
 * docs/migrating-from-jackson.md. Each states what the reference did; the tests of fixed quirks
 * fail on that behaviour, the ones kept on purpose (the events of a user deletion, DELETE's 200)
 * pin it down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectorySyncEvent } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import {
  createDirectory,
  memberIds,
  scimClient,
  startDsyncServer,
  storedEvents,
  userCount,
  v1,
} from '../../helpers/dsync.ts';

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

let s: TestServer;
beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

const q = (filter: string) => `/Users?filter=${encodeURIComponent(filter)}`;

describe('Jackson 26.2 quirks', () => {
  it('resources are scoped to their directory, not to the tenant and product', async () => {
    const a = await createDirectory(s, { tenant: 'q1', product: 'p' });
    const b = await createDirectory(s, { tenant: 'q1', product: 'p' });
    const ca = scimClient(s, a);
    const cb = scimClient(s, b);
    const u = (await ca('POST', '/Users', { userName: 'q1@example.com', userId: 'shared-id' })).body;
    // Reference: b's secret could read, change and delete a's user.
    expect((await cb('GET', `/Users/${u.id}`)).status).toBe(404);
    expect((await cb('DELETE', `/Users/${u.id}`)).status).toBe(404);
    // Reference: the same userId in b overwrote a's record.
    expect((await cb('POST', '/Users', { userName: 'other@example.com', userId: 'shared-id' })).status).toBe(201);
    expect((await ca('GET', '/Users/shared-id')).body.userName).toBe('q1@example.com');
    expect((await cb('GET', '/Users/shared-id')).body.userName).toBe('other@example.com');
  });

  it('filters match current values after PUT, PATCH and renames', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'old@example.com', emails: [{ value: 'old@example.com' }] })).body;
    await c('PUT', `/Users/${u.id}`, { userName: 'new@example.com', emails: [{ value: 'new@example.com' }] });
    // Reference: the email index kept "old@example.com" and never learnt "new@example.com".
    expect((await c('GET', q('userName eq "new@example.com"'))).body.totalResults).toBe(1);
    expect((await c('GET', q('userName eq "old@example.com"'))).body.totalResults).toBe(0);
    const g = (await c('POST', '/Groups', { displayName: 'Before' })).body;
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'replace', path: 'displayName', value: 'After' }] });
    expect((await c('GET', `/Groups?filter=${encodeURIComponent('displayName eq "After"')}`)).body.totalResults).toBe(
      1,
    );
    expect((await c('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Before"')}`)).body.totalResults).toBe(
      0,
    );
  });

  it('totalResults is the true count, beyond the page limit of 50', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    for (let i = 0; i < 60; i++)
      expect((await c('POST', '/Users', { userName: `user${i}@example.com` })).status).toBe(201);
    // Reference: totalResults 50.
    // itemsPerPage is the count asked for (none: 0), as Jackson answers for users.
    const first = (await c('GET', '/Users')).body;
    expect(first).toMatchObject({ totalResults: 60, itemsPerPage: 0 });
    expect(first.Resources).toHaveLength(50);
    const last = await c('GET', '/Users?startIndex=55&count=10');
    expect(last.body).toMatchObject({ startIndex: 55, totalResults: 60, itemsPerPage: 10 });
    expect(last.body.Resources).toHaveLength(6);
  });

  it('the filter honours its attribute; userName is case-insensitive and falls back to the email', async () => {
    const d = await createDirectory(s, { type: 'azure-scim-v2' });
    const c = scimClient(s, d);
    const jane = (
      await c('POST', '/Users', {
        userName: 'jane@tenant.onmicrosoft.com',
        emails: [{ value: 'jane@corp.com' }],
        externalId: 'ext-jane',
      })
    ).body;
    await c('POST', '/Users', { userName: 'bob@tenant.onmicrosoft.com', emails: [{ value: 'bob@corp.com' }] });
    // Reference: matched the email index only, so this missed.
    expect((await c('GET', q('userName eq "jane@tenant.onmicrosoft.com"'))).body.Resources[0]?.id).toBe(jane.id);
    expect((await c('GET', q('userName eq "JANE@TENANT.onmicrosoft.com"'))).body.totalResults).toBe(1);
    expect((await c('GET', q('userName eq "jane@corp.com"'))).body.totalResults).toBe(1);
    // Reference: ignored the attribute, so this matched bob through his email.
    expect((await c('GET', q('externalId eq "bob@corp.com"'))).body.totalResults).toBe(0);
    expect((await c('GET', q('externalId eq "ext-jane"'))).body.Resources[0]?.id).toBe(jane.id);
  });

  it('a deactivated directory checks the secret first, then answers 200 {} and changes nothing', async () => {
    const d = await createDirectory(s);
    await v1(s)('PATCH', `/${d.id}`, { deactivated: true });
    // Reference: 200 {} for any token, or none.
    const wrong = await scimClient(s, d, 'wrong')('POST', '/Users', { userName: 'x@example.com' });
    expect(wrong.status).toBe(401);
    const right = await scimClient(s, d)('POST', '/Users', { userName: 'x@example.com' });
    expect(right).toMatchObject({ status: 200, body: {} });
    expect(await storedEvents(s, d.id)).toEqual([]);
    expect(await userCount(s, d.id)).toBe(0);
  });

  it('a cloud directory refuses SCIM traffic, with or without a token', async () => {
    const d = await createDirectory(s, { type: 'google' });
    const asIfScim = { ...d, scim: { ...d.scim, endpoint: `${s.publicUrl}/api/scim/v2.0/${d.id}` } };
    // Reference: the empty secret matched a missing header, and this created a user (201).
    for (const secret of [null, '']) {
      const r = await scimClient(s, asIfScim, secret)('POST', '/Users', { userName: 'intruder@example.com' });
      expect(r.status).toBe(401);
    }
    // gatehouse's own sync (Google Workspace) goes through the trusted entry point instead.
    const own = await s.container.dsync.services.scim.handle(
      {
        method: 'POST',
        directoryId: d.id,
        resourceType: 'users',
        apiSecret: null,
        body: { userName: 'synced@example.com' },
      },
      { trusted: true },
    );
    expect(own.status).toBe(201);
  });

  it('adding a member again fires no event; an unknown user is kept with an event of what is known', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'member@example.com' })).body;
    const g = (await c('POST', '/Groups', { displayName: 'G' })).body;
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'add', path: 'members', value: [{ value: u.id }] }] });
    const before = (await storedEvents(s, d.id)).length;
    const r = await c('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'add', path: 'members', value: [{ value: 'member1' }, { value: u.id }] }],
    });
    expect(r.status).toBe(200);
    // Reference: a membership row for "member1", a data-less user_added, and a second user_added for u.
    // Here: the membership of "member1" is kept (it resolves when that user appears), with one
    // user_added carrying what is known; re-adding u makes no event.
    const added = (await storedEvents(s, d.id)).slice(before);
    expect(added.map((e) => [e.event, (e.data as { id: string }).id])).toEqual([['group.user_added', 'member1']]);
    expect((await memberIds(s, d.id, g.id)).sort()).toEqual([u.id, 'member1'].sort());
  });

  it('deleting a user removes its memberships (events as Jackson: user.deleted only)', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'leaver@example.com' })).body;
    const g = (await c('POST', '/Groups', { displayName: 'G', members: [{ value: u.id }] })).body;
    const before = (await storedEvents(s, d.id)).length;
    await c('DELETE', `/Users/${u.id}`);
    expect((await storedEvents(s, d.id)).slice(before).map((e) => e.event)).toEqual(['user.deleted']);
    // Reference: the membership row stayed.
    expect(await memberIds(s, d.id, g.id)).toEqual([]);
    const members = await v1(s)('GET', `/groups/${g.id}/members?directoryId=${d.id}`);
    expect(members.body).toEqual({ data: [] });
  });

  it('DELETE answers 200 with the deleted user, not 204 (kept for compatibility)', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'del@example.com' })).body;
    expect(await c('DELETE', `/Users/${u.id}`)).toMatchObject({ status: 200, body: u });
  });

  it('ops are case-insensitive for groups, and remove is honoured for users', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (
      await c('POST', '/Users', {
        userName: 'q10@example.com',
        title: 'Engineer',
        emails: [
          { value: 'q10@example.com', type: 'work', primary: true },
          { value: 'q10@home.example', type: 'home' },
        ],
      })
    ).body;
    const g = (await c('POST', '/Groups', { displayName: 'Q10' })).body;
    // Reference: a capitalised Add on members was silently ignored.
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'Add', path: 'members', value: [{ value: u.id }] }] });
    expect(await memberIds(s, d.id, g.id)).toEqual([u.id]);
    await c('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'REMOVE', path: 'members', value: [{ value: u.id }] }] });
    expect(await memberIds(s, d.id, g.id)).toEqual([]);
    // Reference: "remove" was treated as a set, writing a junk key for a filter path.
    const r = await c('PATCH', `/Users/${u.id}`, {
      Operations: [
        { op: 'remove', path: 'emails[type eq "home"]' },
        { op: 'remove', path: 'title' },
      ],
    });
    expect(r.body.emails).toEqual([{ value: 'q10@example.com', type: 'work', primary: true }]);
    expect(Object.keys(r.body)).not.toContain('title');
    expect(Object.keys(r.body).filter((k) => k.includes('['))).toEqual([]);
  });

  it('URN attribute paths are stored under their schema', async () => {
    const d = await createDirectory(s, { type: 'azure-scim-v2' });
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'q11@example.com' })).body;
    const r = await c('PATCH', `/Users/${u.id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'add', path: `${ENTERPRISE}:department`, value: 'Finance' },
        {
          op: 'replace',
          value: { [`${ENTERPRISE}:employeeNumber`]: '42', [`${ENTERPRISE}:manager`]: { value: 'boss' } },
        },
      ],
    });
    // Reference: raw["urn:…:enterprise:2"]["0:User:department"].
    expect(r.body[ENTERPRISE]).toEqual({ department: 'Finance', employeeNumber: '42', manager: { value: 'boss' } });
    expect(Object.keys(r.body).filter((k) => k.endsWith(':2'))).toEqual([]);
  });

  it('a malformed filter or PATCH body is a 400 with a scimType, not a 500', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    const u = (await c('POST', '/Users', { userName: 'q12@example.com' })).body;
    for (const f of ['userName sw', 'userName eq', 'emails[type eq "work"', '(userName eq "a"', 'userName zz "a"']) {
      const r = await c('GET', q(f));
      expect(r.status, f).toBe(400);
      expect(r.body).toMatchObject({ status: '400', scimType: 'invalidFilter' });
    }
    // Reference: operators other than eq threw a TypeError (500); here they work.
    expect((await c('GET', q('userName co "q12"'))).body.totalResults).toBe(1);
    for (const body of [{}, { Operations: 'x' }, { Operations: [{ op: 'jump' }] }, { Operations: [{ op: 'add' }] }]) {
      const r = await c('PATCH', `/Users/${u.id}`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.scimType).toBe('invalidSyntax');
    }
  });

  it('setTenantAndProduct returns a new object and per-call callbacks stay per call', async () => {
    const ctl = s.container.dsync.controller();
    const d1 = await createDirectory(s, { tenant: 'q13a', product: 'p' });
    const d2 = await createDirectory(s, { tenant: 'q13b', product: 'p' });
    await scimClient(s, d1)('POST', '/Users', { userName: 'in-a@example.com' });
    await scimClient(s, d2)('POST', '/Users', { userName: 'in-b@example.com' });
    const a = ctl.users.setTenantAndProduct('q13a', 'p');
    const b = ctl.users.setTenantAndProduct('q13b', 'p');
    // Reference: a === b, one shared object; a.getAll() then read tenant q13b.
    expect(a).not.toBe(b);
    const [ra, rb] = await Promise.all([a.getAll(), b.getAll()]);
    expect(ra.data?.map((u) => u.email)).toEqual(['in-a@example.com']);
    expect(rb.data?.map((u) => u.email)).toEqual(['in-b@example.com']);
    // Reference: the handler kept `this.callback`, so concurrent requests could swap callbacks.
    const seen: Record<string, DirectorySyncEvent[]> = { x: [], y: [] };
    const send = (dir: typeof d1, key: 'x' | 'y', n: number) =>
      ctl.requests.handle(
        {
          method: 'POST',
          directoryId: dir.id,
          resourceType: 'users',
          apiSecret: dir.scim.secret,
          body: { userName: `${key}${n}@example.com` },
          query: {},
        },
        async (e) => {
          seen[key]?.push(e);
        },
      );
    await Promise.all([1, 2, 3].flatMap((n) => [send(d1, 'x', n), send(d2, 'y', n)]));
    expect(seen.x?.every((e) => e.directory_id === d1.id)).toBe(true);
    expect(seen.y?.every((e) => e.directory_id === d2.id)).toBe(true);
    expect([seen.x?.length, seen.y?.length]).toEqual([3, 3]);
  });
});
