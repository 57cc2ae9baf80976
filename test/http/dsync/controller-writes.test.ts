/**
 * The write side of Jackson's directorySyncController, driven as an embedder drives it (the
 * package imported by its name, `import { controllers } from 'gatehouse'`): result shapes against Jackson 26.2.0's for the same calls
 * (test/fixtures/dsync/jackson-controller-writes.json, produced by the .cjs next to it), events and
 * webhook deliveries identical to the SCIM requests making the same changes, `requests.handle`
 * callback semantics, and `setTenantAndProduct` in two statements.
 */
import { readFileSync } from 'node:fs';
import { type Controllers, controllers } from 'gatehouse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord, WebhookEvent } from '../../../src/dsync/types.ts';
import { TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';
import { outboxCount } from '../../helpers/webhooks.ts';

const EXTERNAL = 'https://my-cool-app.com';
const jackson = JSON.parse(
  readFileSync(new URL('../../fixtures/dsync/jackson-controller-writes.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

let s: TestServer;
let lib: Controllers;
let withCb: Controllers;
let both: Controllers;
const seen: WebhookEvent[] = [];
const seenBoth: WebhookEvent[] = [];

beforeAll(async () => {
  s = await startDsyncServer();
  const db = { engine: 'sql' as const, url: s.database.url, encryptionKey: TEST_SECRET };
  lib = await controllers({ externalUrl: EXTERNAL, db });
  withCb = await controllers({ externalUrl: EXTERNAL, db, dsync: { callback: (e) => void seen.push(e) } });
  both = await controllers({
    externalUrl: EXTERNAL,
    db,
    dsync: { callback: (e) => void seenBoth.push(e), webhooksWithCallback: true },
  });
});
afterAll(async () => {
  await lib?.close();
  await withCb?.close();
  await both?.close();
  await s?.close();
});

/** The shape of a value as the fixture records it: key → type, arrays by their first element. */
function shape(v: unknown): unknown {
  if (v === null) return null;
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (v instanceof Date) return 'date';
  if (typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, shape((v as Record<string, unknown>)[k])]),
    );
  return typeof v;
}

/** Every key Jackson returns is there with the same type (gatehouse may add keys, never drop one). */
function expectJacksonShape(name: string, got: unknown) {
  const want = jackson[name];
  const have = shape(got);
  const covers = (w: unknown, h: unknown, path: string): void => {
    if (w === 'date') {
      // Jackson returns a Date; gatehouse an ISO 8601 string (the JSON form of the same Date).
      expect(typeof h === 'string' || h === 'date', `${path}: date`).toBe(true);
      return;
    }
    if (w && typeof w === 'object' && !Array.isArray(w)) {
      expect(h && typeof h === 'object', `${path}: object`).toBeTruthy();
      for (const [k, v] of Object.entries(w)) covers(v, (h as Record<string, unknown>)[k], `${path}.${k}`);
      return;
    }
    expect(h, path).toEqual(w);
  };
  covers(want, have, name);
}

const WIRE = (e: WebhookEvent) => {
  const { id: _id, seq: _seq, created_at: _c, directory_id: _d, tenant: _t, ...rest } = e;
  return rest;
};

async function scimAndLib(tenant: string) {
  const viaScim = await createDirectory(s, {
    tenant: `${tenant}-scim`,
    product: 'p',
    webhook_url: 'https://example.com/h',
    webhook_secret: 'x',
  });
  const viaLib = await createDirectory(s, {
    tenant: `${tenant}-lib`,
    product: 'p',
    webhook_url: 'https://example.com/h',
    webhook_secret: 'x',
  });
  return { viaScim, viaLib };
}

const userBody = (n: number) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: `user${n}@example.com`,
  name: { givenName: `Given${n}`, familyName: `Family${n}` },
  emails: [{ primary: true, value: `user${n}@example.com`, type: 'work' }],
  active: true,
});

describe('users and groups write side', () => {
  it('answers Jackson’s shapes and emits the events and webhooks of the equivalent SCIM requests', async () => {
    const { viaScim, viaLib } = await scimAndLib('same');
    const scim = scimClient(s, viaScim);
    const u = (await scim('POST', '/Users', userBody(1))).body;
    await scim('PUT', `/Users/${u.id}`, { ...userBody(1), name: { givenName: 'Changed', familyName: 'Family1' } });
    const g = (await scim('POST', '/Groups', { displayName: 'Team', groupId: 'g1' })).body;
    await scim('PUT', `/Groups/${g.id}`, { displayName: 'Team 2' });
    await scim('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'add', path: 'members', value: [{ value: u.id }] }] });
    await scim('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'remove', path: 'members', value: [{ value: u.id }] }],
    });
    await scim('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'add', path: 'members', value: [{ value: u.id }] }] });
    await scim('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'remove', path: 'members' }] });
    await scim('DELETE', `/Groups/${g.id}`);
    await scim('DELETE', `/Users/${u.id}`);

    const ctl = lib.directorySyncController;
    const users = ctl.users.setTenantAndProduct(viaLib.tenant, 'p');
    const groups = ctl.groups.setTenantAndProduct(viaLib.tenant, 'p');
    const raw = { ...userBody(1), id: 'ignored' };
    const created = await users.create({
      directoryId: viaLib.id,
      id: u.id,
      first_name: 'Given1',
      last_name: 'Family1',
      email: 'user1@example.com',
      active: true,
      raw,
    });
    expect(created.error).toBeNull();
    expectJacksonShape('users.create', created);
    expect(created.data?.raw.id).toBe(u.id);
    const updated = await users.update(u.id, {
      first_name: 'Changed',
      last_name: 'Family1',
      email: 'user1@example.com',
      active: true,
      raw: { ...userBody(1), name: { givenName: 'Changed', familyName: 'Family1' } },
    });
    expectJacksonShape('users.update', updated);
    expectJacksonShape('users.get', await users.get(u.id));
    const gc = await groups.create({ directoryId: viaLib.id, name: 'Team', raw: { displayName: 'Team' }, id: 'g1' });
    expectJacksonShape('groups.create', gc);
    expectJacksonShape('groups.update', await groups.update('g1', { name: 'Team 2', raw: { displayName: 'Team 2' } }));
    expectJacksonShape('groups.addUserToGroup', await groups.addUserToGroup('g1', u.id));
    expectJacksonShape('groups.isUserInGroup', await groups.isUserInGroup('g1', u.id));
    expect(await groups.isUserInGroup('g1', u.id)).toBe(true);
    expectJacksonShape('groups.removeUserFromGroup', await groups.removeUserFromGroup('g1', u.id));
    expect(await groups.isUserInGroup('g1', u.id)).toBe(false);
    await groups.addUserToGroup('g1', u.id);
    expectJacksonShape('groups.removeAllUsers', await groups.removeAllUsers('g1'));
    expect(await groups.isUserInGroup('g1', u.id)).toBe(false);
    expectJacksonShape('groups.delete', await groups.delete('g1'));
    expect(await groups.delete('g1')).toEqual({
      data: null,
      error: { message: 'Group with id g1 not found.', code: 404 },
    });
    expectJacksonShape('users.delete', await users.delete(u.id));
    expect(await users.delete(u.id)).toEqual({ data: null, error: { message: 'User not found', code: 404 } });

    const a = await storedEvents(s, viaScim.id);
    const b = await storedEvents(s, viaLib.id);
    expect(b.map((e) => e.event)).toEqual(a.map((e) => e.event));
    expect(b.map((e) => e.event)).toEqual([
      'user.created',
      'user.updated',
      'group.created',
      'group.updated',
      'group.user_added',
      'group.user_removed',
      'group.user_added',
      'group.user_removed',
      'group.deleted',
      'user.deleted',
    ]);
    // Same payloads apart from the directory and tenant (and the raw bodies, which differ in form).
    const strip = (e: (typeof a)[number]) => {
      const { seq: _s, directory_id: _d, tenant: _t, data, ...rest } = e;
      const d = data as unknown as Record<string, unknown>;
      return {
        ...rest,
        id: d.id,
        name: d.name,
        email: d.email,
        first_name: d.first_name,
        group: (d.group as { id?: string })?.id,
      };
    };
    expect(b.map(strip)).toEqual(a.map(strip));
    // A webhook is queued for each, as for the SCIM requests.
    expect(await outboxCount(s, viaLib.id)).toBe(await outboxCount(s, viaScim.id));
    expect(await outboxCount(s, viaLib.id)).toBe(10);
  });

  it('deleteAll removes every user and group in bounded batches, one event each', async () => {
    const d = await createDirectory(s, { tenant: 'bulk', product: 'p' });
    const users = lib.directorySyncController.users.setTenantAndProduct('bulk', 'p');
    const groups = lib.directorySyncController.groups.setTenantAndProduct('bulk', 'p');
    for (let i = 0; i < 3; i++) {
      await users.create({ directoryId: d.id, email: `b${i}@example.com`, raw: { userName: `b${i}@example.com` } });
      await groups.create({ directoryId: d.id, name: `G${i}`, raw: {} });
    }
    expect(await users.deleteAll(d.id)).toBeUndefined();
    expect(await groups.deleteAll(d.id)).toBeUndefined();
    expect((await users.getAll({ directoryId: d.id })).data).toEqual([]);
    expect((await groups.getAll({ directoryId: d.id })).data).toEqual([]);
    const events = (await storedEvents(s, d.id)).map((e) => e.event);
    expect(events.filter((e) => e === 'user.deleted')).toHaveLength(3);
    expect(events.filter((e) => e === 'group.deleted')).toHaveLength(3);
  });

  it('refuses duplicates, unknown directories and directories of another tenant with Jackson envelopes', async () => {
    const d = await createDirectory(s, { tenant: 'dup', product: 'p' });
    const users = lib.directorySyncController.users.setTenantAndProduct('dup', 'p');
    const input = { directoryId: d.id, email: 'dup@example.com', raw: { userName: 'dup@example.com' } };
    expect((await users.create(input)).error).toBeNull();
    expect(await users.create(input)).toEqual({ data: null, error: { message: 'User already exists', code: 409 } });
    const other = lib.directorySyncController.users.setTenantAndProduct('someone-else', 'p');
    expect((await other.create(input)).error).toEqual({ message: 'Directory configuration not found.', code: 404 });
    expect((await other.update('x', {})).error).toEqual({ message: 'User not found', code: 404 });
    const groups = lib.directorySyncController.groups.setTenantAndProduct('dup', 'p');
    await expect(groups.addUserToGroup('nope', 'x')).rejects.toMatchObject({ status: 404 });
    expect((await groups.create({ directoryId: d.id, name: '', raw: {} })).error?.code).toBe(400);
  });

  it('refuses writes to a deactivated directory, and changes nothing', async () => {
    const d = await createDirectory(s, { tenant: 'off', product: 'p' });
    const ctl = lib.directorySyncController;
    await ctl.directories.update(d.id, { deactivated: true });
    const users = ctl.users.setTenantAndProduct('off', 'p');
    expect(
      await users.create({ directoryId: d.id, email: 'x@example.com', raw: { userName: 'x@example.com' } }),
    ).toEqual({
      data: null,
      error: { message: 'The directory is deactivated: nothing was changed.', code: 409 },
    });
    expect((await users.getAll({ directoryId: d.id })).data).toEqual([]);
    expect(await storedEvents(s, d.id)).toEqual([]);
  });

  it('webhookLogs.log records a delivery the embedder made, in Jackson’s shape', async () => {
    const d = await createDirectory(s, {
      tenant: 'wl',
      product: 'p',
      webhook_url: 'https://example.com/h',
      webhook_secret: 'x',
    });
    const wl = lib.directorySyncController.webhookLogs.setTenantAndProduct('wl', 'p');
    const log = await wl.log(d, { event: 'user.created' }, 200);
    expectJacksonShape('webhookLogs.log', log);
    expect(log).toMatchObject({ delivered: true, status_code: 200, webhook_endpoint: 'https://example.com/h' });
    expect(await wl.get(log.id)).toEqual(log);
    expect((await wl.log(d, { event: 'x' }, 500)).delivered).toBe(false);
  });
});

describe('callbacks', () => {
  const create = (ctl: Controllers, d: DirectoryRecord, n: number, cb?: (e: WebhookEvent) => void) =>
    ctl.directorySyncController.requests.handle(
      { method: 'POST', directoryId: d.id, resourceType: 'Users', apiSecret: d.scim.secret, body: userBody(n) },
      cb,
    );

  it('a callback is the event sink: called after the commit, and no webhook is sent by that path', async () => {
    const d = await createDirectory(s, {
      tenant: 'sink',
      product: 'p',
      webhook_url: 'https://example.com/h',
      webhook_secret: 'x',
    });
    const got: WebhookEvent[] = [];
    expect((await create(lib, d, 1, (e) => void got.push(e))).status).toBe(201);
    expect(got.map((e) => e.event)).toEqual(['user.created']);
    expect(await outboxCount(s, d.id)).toBe(0);
    // dsync.callback: the same for requests.handle and the direct writes.
    expect((await create(withCb, d, 2)).status).toBe(201);
    const users = withCb.directorySyncController.users.setTenantAndProduct('sink', 'p');
    await users.create({ directoryId: d.id, email: 'w@example.com', raw: { userName: 'w@example.com' } });
    expect(seen.filter((e) => e.directory_id === d.id).map((e) => e.event)).toEqual(['user.created', 'user.created']);
    expect(await outboxCount(s, d.id)).toBe(0);
    // Without a callback the webhook goes out; the events are stored either way.
    expect((await create(lib, d, 3)).status).toBe(201);
    expect(await outboxCount(s, d.id)).toBe(1);
    expect((await storedEvents(s, d.id)).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it('dsync.webhooksWithCallback keeps both', async () => {
    const d = await createDirectory(s, {
      tenant: 'both',
      product: 'p',
      webhook_url: 'https://example.com/h',
      webhook_secret: 'x',
    });
    expect((await create(both, d, 1)).status).toBe(201);
    expect(seenBoth.filter((e) => e.directory_id === d.id)).toHaveLength(1);
    expect(await outboxCount(s, d.id)).toBe(1);
    expect(WIRE(seenBoth.at(-1) as WebhookEvent)).toMatchObject({ event: 'user.created', product: 'p' });
  });
});

describe('setTenantAndProduct', () => {
  it('binds the instance (two statements, as in Jackson) and returns an independent bound object', async () => {
    const d = await createDirectory(s, { tenant: 'two', product: 'p' });
    const ctl = lib.directorySyncController;
    const bound = ctl.users.setTenantAndProduct('two', 'p');
    const created = await bound.create({
      directoryId: d.id,
      email: 't@example.com',
      raw: { userName: 't@example.com' },
    });
    const id = created.data?.id as string;
    const users = ctl.users;
    users.setTenantAndProduct('two', 'p');
    expect((await users.get(id)).data?.id).toBe(id);
    expectJacksonShape('users.twoStatements', await users.get('nope'));
    // Re-binding the shared instance does not move the object returned earlier.
    users.setTenantAndProduct('elsewhere', 'p');
    expect((await users.get(id)).error).toEqual({ message: 'User not found', code: 404 });
    expect((await bound.get(id)).data?.id).toBe(id);
    const groups = ctl.groups;
    groups.setTenantAndProduct('two', 'p');
    expect((await groups.getAll()).error).toBeNull();
  });
});
