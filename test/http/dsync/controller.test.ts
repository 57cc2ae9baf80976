/**
 * The library entry point: `controllers({ externalUrl, db })` and Jackson's directorySyncController
 * (after Jackson npm/test/dsync/directories.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectorySyncEvent } from '../../../src/dsync/types.ts';
import { type Controllers, controllers } from '../../../src/index.ts';
import { TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { startDsyncServer, v1 } from '../../helpers/dsync.ts';

const EXTERNAL = 'https://my-cool-app.com';
let s: TestServer;
let lib: Controllers;
let received: DirectorySyncEvent[];

beforeAll(async () => {
  s = await startDsyncServer();
  received = [];
  lib = await controllers({
    externalUrl: EXTERNAL,
    db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET },
    dsync: {
      callback: async (e) => {
        received.push(e);
      },
    },
  });
});
afterAll(async () => {
  await lib?.close();
  await s?.close();
});

const ctl = () => lib.directorySyncController;
const dirInput = { tenant: 'boxyhq.com', product: 'saml-demo', type: 'okta-scim-v2' as const };

describe('controllers()', () => {
  it('needs externalUrl', async () => {
    await expect(controllers({} as never)).rejects.toThrow('externalUrl is required');
  });

  it('shares the database with the service: records created by either are the same', async () => {
    const { data } = await ctl().directories.create({ ...dirInput, name: 'shared' });
    const viaHttp = await v1(s)('GET', `/${data?.id}`);
    expect(viaHttp.body.data.scim.secret).toBe(data?.scim.secret);
    expect(data?.scim.endpoint).toBe(`${EXTERNAL}/api/scim/v2.0/${data?.id}`);
  });

  it("runs on the embedded PostgreSQL with engine 'memory'", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-lib-'));
    const mem = await controllers({ externalUrl: EXTERNAL, db: { engine: 'memory', dir } });
    try {
      const { data, error } = await mem.directorySyncController.directories.create(dirInput);
      expect(error).toBeNull();
      expect((await mem.directorySyncController.directories.get(data?.id ?? '')).data?.id).toBe(data?.id);
    } finally {
      await mem.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('directories', () => {
  it('create/get/update/delete answer Jackson envelopes', async () => {
    const created = await ctl().directories.create({
      ...dirInput,
      webhook_url: 'https://example.com/h',
      webhook_secret: 's',
    });
    expect(created.error).toBeNull();
    const id = created.data?.id ?? '';
    expect(await ctl().directories.get(id)).toEqual({ data: created.data, error: null });
    const updated = await ctl().directories.update(id, { name: 'New name', log_webhook_events: true });
    expect(updated.data).toMatchObject({ name: 'New name', log_webhook_events: true });
    expect(await ctl().directories.delete(id)).toEqual({ data: null, error: null });
    expect(await ctl().directories.get(id)).toEqual({
      data: null,
      error: { message: 'Directory configuration not found.', code: 404 },
    });
    expect(await ctl().directories.delete(id)).toEqual({
      data: null,
      error: { message: 'Directory configuration not found.', code: 404 },
    });
  });

  it('reports Jackson’s messages for bad input', async () => {
    expect((await ctl().directories.create({ tenant: 'x' })).error).toEqual({
      message: 'Missing required parameters.',
      code: 400,
    });
    expect((await ctl().directories.get('')).error).toEqual({ message: 'Missing required parameters.', code: 400 });
    expect((await ctl().directories.update('', {})).error).toEqual({
      message: 'Missing required parameters.',
      code: 400,
    });
    expect((await ctl().directories.delete('')).error).toEqual({ message: 'Missing required parameter.', code: 400 });
    expect((await ctl().directories.getByTenantAndProduct('t', '')).error?.code).toBe(400);
    expect((await ctl().directories.filterBy({})).error).toEqual({
      message: 'Please provide a product or provider.',
      code: 400,
    });
  });

  it('filters by provider and by product, newest first, and counts', async () => {
    const before = await ctl().directories.getCount();
    const g1 = (await ctl().directories.create({ tenant: 'g', product: 'cloud', type: 'google' })).data;
    const g2 = (await ctl().directories.create({ tenant: 'g', product: 'cloud', type: 'google' })).data;
    const byProvider = await ctl().directories.filterBy({ provider: 'google' });
    expect(byProvider.data?.slice(0, 2).map((d) => d.id)).toEqual([g2?.id, g1?.id]);
    expect(byProvider.data?.[0]).toMatchObject({ scim: { path: '', secret: '' }, google_access_token: '' });
    expect((await ctl().directories.filterBy({ product: 'cloud' })).data).toHaveLength(2);
    expect((await ctl().directories.getByTenantAndProduct('g', 'cloud')).data).toHaveLength(2);
    expect((await ctl().directories.getAll({ pageLimit: 1 })).data).toHaveLength(1);
    expect(await ctl().directories.getCount()).toBe(before + 2);
    expect(ctl().providers()).toEqual({
      'azure-scim-v2': 'Entra ID SCIM v2.0',
      'onelogin-scim-v2': 'OneLogin SCIM v2.0',
      'okta-scim-v2': 'Okta SCIM v2.0',
      'jumpcloud-scim-v2': 'JumpCloud v2.0',
      'generic-scim-v2': 'Generic SCIM v2.0',
      google: 'Google',
    });
  });
});

describe('requests.handle, users and groups', () => {
  it('calls the callback after the commit, with each event', async () => {
    const dir = (await ctl().directories.create({ ...dirInput, tenant: 'cb' })).data!;
    const client = new pg.Client({ connectionString: s.database.url });
    await client.connect();
    const visible: number[] = [];
    try {
      const r = await ctl().requests.handle(
        {
          method: 'POST',
          directoryId: dir.id,
          resourceType: 'Users',
          apiSecret: dir.scim.secret,
          body: { userName: 'cb@example.com' },
          query: {},
        },
        async () => {
          // Another connection sees the user and the event: the transaction has committed.
          const u = await client.query('select count(*)::int as n from dsync_users where directory_id = $1', [dir.id]);
          const e = await client.query('select count(*)::int as n from dsync_events where directory_id = $1', [dir.id]);
          visible.push(u.rows[0].n, e.rows[0].n);
        },
      );
      expect(r.status).toBe(201);
      expect(visible).toEqual([1, 1]);
    } finally {
      await client.end();
    }
  });

  it('uses dsync.callback when the call gives none, and answers errors as SCIM bodies', async () => {
    const dir = (await ctl().directories.create({ ...dirInput, tenant: 'default-cb' })).data!;
    const req = {
      method: 'POST',
      directoryId: dir.id,
      resourceType: 'users',
      apiSecret: dir.scim.secret,
      body: { userName: 'd@example.com' },
    };
    expect((await ctl().requests.handle(req)).status).toBe(201);
    expect(received.at(-1)).toMatchObject({ event: 'user.created', directory_id: dir.id });
    expect(await ctl().requests.handle(req)).toEqual({
      status: 409,
      data: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        detail: 'User already exists',
        status: '409',
        scimType: 'uniqueness',
      },
    });
    expect(await ctl().requests.handle({ ...req, resourceType: 'Bulk' })).toEqual({
      status: 404,
      data: {},
    });
    expect((await ctl().requests.handle({ ...req, apiSecret: 'nope' })).status).toBe(401);
  });

  it('reads users and groups after setTenantAndProduct, and not before', async () => {
    const dir = (await ctl().directories.create({ ...dirInput, tenant: 'reads' })).data!;
    const handle = (resourceType: string, body: unknown, resourceId?: string, method = 'POST') =>
      ctl().requests.handle({
        method,
        directoryId: dir.id,
        resourceType,
        resourceId,
        apiSecret: dir.scim.secret,
        body,
        query: {},
      });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(((await handle('users', { userName: `m${i}@example.com` })).data as { id: string }).id);
    const g = (await handle('groups', { displayName: 'All', members: ids.map((value) => ({ value })) })).data as {
      id: string;
    };

    const users = ctl().users.setTenantAndProduct('reads', 'crm');
    expect((await users.getAll()).data).toHaveLength(0);
    const scoped = ctl().users.setTenantAndProduct('reads', dirInput.product);
    const all = await scoped.getAll({ directoryId: dir.id });
    expect(all.error).toBeNull();
    expect(all.data?.map((u) => u.id)).toEqual([...ids].reverse());
    expect((await scoped.get(ids[0] as string)).data).toMatchObject({
      id: ids[0],
      email: 'm0@example.com',
      directoryId: dir.id,
    });
    expect((await scoped.get('nope')).error).toEqual({ message: 'User not found', code: 404 });
    expect(await s.container.dsync.controller().users.get(ids[0] as string)).toEqual({
      data: null,
      error: { message: 'Set tenant and product before using store.', code: 500 },
    });

    const groups = ctl().groups.setTenantAndProduct('reads', dirInput.product);
    const one = await groups.get(g.id);
    expect(one.data?.members).toHaveLength(5);
    expect(one.data?.members.map((m) => m.user_id).sort()).toEqual([...ids].sort());
    expect(one.data?.members[0]?.group_id).toBe(g.id);
    expect((await groups.get('nope')).error).toEqual({ message: 'Group with id nope not found.', code: 404 });
    const pages = [];
    for (let offset = 0; offset < 6; offset += 2)
      pages.push(await groups.getGroupMembers({ groupId: g.id, pageOffset: offset, pageLimit: 2 }));
    for (const p of pages) expect(Object.keys(p)).toEqual(['data']);
    // Pages follow one stable order and cover every member once.
    expect(pages.flatMap((p) => p.data ?? []).map((m) => m.user_id)).toEqual(one.data?.members.map((m) => m.user_id));
    expect(pages.map((p) => p.data?.length)).toEqual([2, 2, 1]);
    expect(await groups.getGroupMembers({ groupId: 'nope' })).toEqual({ data: [] });
  });
  it("binds the shared users and groups to the directory of the last authenticated request, as Jackson's handlers did", async () => {
    // A controller of its own: what this test binds stays here.
    const c = s.container.dsync.controller();
    const a = (await c.directories.create({ ...dirInput, tenant: 'bind-a' })).data!;
    const b = (await c.directories.create({ ...dirInput, tenant: 'bind-b' })).data!;
    const req = (dir: typeof a, resourceType: string, body: unknown, apiSecret = dir.scim.secret) =>
      c.requests.handle({ method: 'POST', directoryId: dir.id, resourceType, apiSecret, body, query: {} });

    const safe = c.users.setTenantAndProduct('bind-b', dirInput.product);
    const userA = (await req(a, 'Users', { userName: 'bound@example.com' })).data as { id: string };
    // Jackson's tests delete right after the request, with no setTenantAndProduct of their own.
    expect(await c.users.get(userA.id)).toMatchObject({ data: { id: userA.id, directoryId: a.id }, error: null });
    expect(await c.groups.get('x')).toEqual({
      data: null,
      error: { message: 'Set tenant and product before using store.', code: 500 },
    });
    // A refused request moves nothing: the shared users stay on directory A.
    expect((await req(b, 'Users', { userName: 'x@example.com' }, 'wrong')).status).toBe(401);
    expect((await c.users.get(userA.id)).data?.id).toBe(userA.id);
    // A Groups request binds users and groups to its directory.
    const groupB = (await req(b, 'Groups', { displayName: 'B' })).data as { id: string };
    expect((await c.groups.get(groupB.id)).data?.id).toBe(groupB.id);
    expect((await c.users.get(userA.id)).error).toEqual({ message: 'User not found', code: 404 });
    expect(await c.users.delete(userA.id)).toMatchObject({ error: { code: 404 } });
    // The object setTenantAndProduct returned never moved.
    expect((await safe.get(userA.id)).error).toEqual({ message: 'User not found', code: 404 });
    expect((await c.users.setTenantAndProduct('bind-a', dirInput.product).delete(userA.id)).error).toBeNull();
  });
});
