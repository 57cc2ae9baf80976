/**
 * SCIM `/Users` over HTTP (Jackson npm/test/dsync/users.test.ts and e2e/api/scim/v2.0/users.spec.ts;
 * RFC 7644 §3).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';

const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

const jackson = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: 'jackson@boxyhq.com',
  name: { givenName: 'Jackson', familyName: 'M', formatted: 'Jackson M' },
  emails: [{ primary: true, value: 'jackson@boxyhq.com', type: 'work' }],
  meta: { resourceType: 'User' },
  displayName: 'Jackson M',
  locale: 'en-US',
  externalId: '00u5b1hpjh9tGaknX5d7',
  groups: [],
  active: true,
  title: 'Manager',
};

let s: TestServer;
let dir: DirectoryRecord;
let c: ReturnType<typeof scimClient>;
let user: { id: string } & Record<string, unknown>;

beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});
beforeEach(async () => {
  dir = await createDirectory(s);
  c = scimClient(s, dir);
  const r = await c('POST', '/Users', jackson);
  expect(r.status).toBe(201);
  user = r.body;
});

const lastEvent = async () => (await storedEvents(s, dir.id)).at(-1);

describe('POST /Users', () => {
  it('answers 201 with the body and its id, as application/scim+json', async () => {
    const r = await c('POST', '/Users', {
      ...jackson,
      userName: 'kiran@boxyhq.com',
      emails: [{ value: 'kiran@boxyhq.com' }],
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(r.body).toEqual({
      ...jackson,
      userName: 'kiran@boxyhq.com',
      emails: [{ value: 'kiran@boxyhq.com' }],
      id: r.body.id,
    });
  });

  it('answers 409 to a second user with the same userName or email', async () => {
    for (const body of [
      jackson,
      { userName: 'JACKSON@boxyhq.com' },
      { userName: 'other', emails: [{ value: 'jackson@boxyhq.com' }] },
    ]) {
      const r = await c('POST', '/Users', body);
      expect(r.status).toBe(409);
      expect(r.body).toEqual({
        schemas: [ERROR],
        detail: 'User already exists',
        status: '409',
        scimType: 'uniqueness',
      });
    }
  });

  it('writes user.created with Jackson’s payload', async () => {
    expect(await lastEvent()).toEqual({
      seq: 1,
      event: 'user.created',
      tenant: 'acme',
      product: 'crm',
      directory_id: dir.id,
      data: {
        id: user.id,
        first_name: 'Jackson',
        last_name: 'M',
        email: 'jackson@boxyhq.com',
        active: true,
        raw: user,
      },
    });
  });

  it('keeps roles (a CSV string is split) and puts them in events', async () => {
    const r = await c('POST', '/Users', { userName: 'r@x.com', roles: 'viewer,editor' });
    expect((await lastEvent())?.data).toMatchObject({ id: r.body.id, roles: ['viewer', 'editor'] });
  });

  it('refuses a body without userName or email, and a non-boolean active', async () => {
    expect((await c('POST', '/Users', { name: { givenName: 'x' } })).body).toMatchObject({
      status: '400',
      scimType: 'invalidValue',
    });
    expect((await c('POST', '/Users', { userName: 'y', active: 'maybe' })).body).toMatchObject({
      status: '400',
      scimType: 'invalidValue',
    });
  });
});

describe('GET /Users', () => {
  it('filters by userName, with Jackson’s ListResponse', async () => {
    const r = await c(
      'GET',
      `/Users?filter=${encodeURIComponent('userName eq "jackson@boxyhq.com"')}&count=1&startIndex=1`,
    );
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['schemas', 'startIndex', 'totalResults', 'itemsPerPage', 'Resources']);
    expect(r.body).toEqual({ schemas: [LIST], startIndex: 1, totalResults: 1, itemsPerPage: 1, Resources: [user] });
  });

  it('answers a miss with zeros', async () => {
    const r = await c('GET', '/Users?filter=userName eq "nobody@boxyhq.com"');
    expect(r.body).toEqual({ schemas: [LIST], startIndex: 1, totalResults: 0, itemsPerPage: 0, Resources: [] });
  });

  it('gets one user by id, and 404s an unknown id', async () => {
    expect((await c('GET', `/Users/${user.id}`)).body).toEqual(user);
    const r = await c('GET', '/Users/nope');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ schemas: [ERROR], detail: 'User not found', status: '404' });
  });

  it('lists users newest first with the true total', async () => {
    const k = (await c('POST', '/Users', { userName: 'kiran@boxyhq.com' })).body;
    const r = await c('GET', '/Users?startIndex=1&count=1');
    expect(r.body).toMatchObject({ startIndex: 1, totalResults: 2, itemsPerPage: 1, Resources: [{ id: k.id }] });
    const all = await c('GET', '/Users');
    expect(all.body.Resources.map((u: { id: string }) => u.id)).toEqual([k.id, user.id]);
  });
});

describe('PUT /Users/{id}', () => {
  it('replaces the user, custom attributes included, and writes user.updated', async () => {
    const body = { ...jackson, city: 'Bengaluru', roles: ['admin'], name: { givenName: 'J2', familyName: 'M2' } };
    const r = await c('PUT', `/Users/${user.id}`, body);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ...body, id: user.id });
    expect((await lastEvent())?.data).toMatchObject({
      first_name: 'J2',
      last_name: 'M2',
      roles: ['admin'],
      raw: { city: 'Bengaluru' },
    });
  });

  it('answers 409 when the new userName belongs to another user, and changes nothing', async () => {
    const other = (await c('POST', '/Users', { userName: 'other@boxyhq.com' })).body;
    const r = await c('PUT', `/Users/${other.id}`, { userName: 'Jackson@BoxyHQ.com' });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ detail: 'User already exists', scimType: 'uniqueness' });
    expect((await c('GET', `/Users/${other.id}`)).body.userName).toBe('other@boxyhq.com');
  });

  it('sets active from the body and drops roles that are not sent', async () => {
    await c('PUT', `/Users/${user.id}`, { ...jackson, roles: ['a'] });
    await c('PUT', `/Users/${user.id}`, { ...jackson, active: false });
    const e = await lastEvent();
    expect(e?.data).toMatchObject({ active: false });
    expect(e?.data).not.toHaveProperty('roles');
  });
});

describe('PATCH /Users/{id}', () => {
  const patch = (Operations: unknown[]) =>
    c('PATCH', `/Users/${user.id}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations });

  it('deactivates with a path-less replace (Okta)', async () => {
    const r = await patch([{ op: 'replace', value: { active: false } }]);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ...user, active: false });
    expect((await lastEvent())?.data).toMatchObject({ active: false });
  });

  it('applies several operations, multi-valued paths included', async () => {
    const r = await patch([
      { op: 'replace', path: 'name.givenName', value: 'David' },
      { op: 'replace', path: 'name.familyName', value: 'Jones' },
      { op: 'replace', value: { active: false } },
    ]);
    expect(r.body).toMatchObject({
      name: { givenName: 'David', familyName: 'Jones', formatted: 'Jackson M' },
      active: false,
    });
    expect((await lastEvent())?.data).toMatchObject({ first_name: 'David', last_name: 'Jones', active: false });
  });

  it('keeps custom and nested attributes', async () => {
    const r = await patch([
      { op: 'replace', path: 'companyName', value: 'BoxyHQ' },
      { op: 'add', path: 'address.streetAddress', value: '123 Main St' },
    ]);
    expect(r.body).toMatchObject({ companyName: 'BoxyHQ', address: { streetAddress: '123 Main St' } });
  });

  it('turns Entra ID filter paths into arrays of typed entries', async () => {
    const r = await patch([
      { op: 'replace', path: 'phoneNumbers[type eq "work"].value', value: '555-0100' },
      { op: 'replace', path: 'phoneNumbers[type eq "mobile"].value', value: '555-0199' },
      { op: 'replace', path: 'addresses[type eq "work"].streetAddress', value: '1 Main St' },
      { op: 'replace', path: 'addresses[type eq "work"].locality', value: 'Springfield' },
      { op: 'replace', path: 'addresses[type eq "work"].postalCode', value: '12345' },
      { op: 'replace', path: 'addresses[type eq "work"].country', value: 'US' },
    ]);
    expect(r.body.phoneNumbers).toEqual([
      { type: 'work', value: '555-0100' },
      { type: 'mobile', value: '555-0199' },
    ]);
    expect(r.body.addresses).toEqual([
      { type: 'work', streetAddress: '1 Main St', locality: 'Springfield', postalCode: '12345', country: 'US' },
    ]);
  });

  it('handles arbitrary filter paths', async () => {
    const r = await patch([
      { op: 'add', path: 'ims[type eq "xmpp"].value', value: 'jackson@jabber.example' },
      { op: 'add', path: 'photos[type eq "thumbnail"].value', value: 'https://example.com/t.jpg' },
    ]);
    expect(r.body.ims).toEqual([{ type: 'xmpp', value: 'jackson@jabber.example' }]);
    expect(r.body.photos).toEqual([{ type: 'thumbnail', value: 'https://example.com/t.jpg' }]);
  });

  it('adds, replaces and removes roles, as events show', async () => {
    await patch([{ op: 'add', path: 'roles', value: 'viewer,editor' }]);
    expect((await lastEvent())?.data).toMatchObject({ roles: ['viewer', 'editor'] });
    await patch([{ op: 'replace', path: 'roles', value: [{ value: 'admin' }] }]);
    expect((await lastEvent())?.data).toMatchObject({ roles: [{ value: 'admin' }] });
    await patch([{ op: 'remove', path: 'roles' }]);
    expect((await lastEvent())?.data).not.toHaveProperty('roles');
  });

  it('writes user.updated even when nothing changed (Jackson)', async () => {
    await patch([]);
    expect((await lastEvent())?.event).toBe('user.updated');
  });
});

describe('DELETE /Users/{id}', () => {
  it('answers 200 with the deleted user, writes user.deleted, and the filter no longer finds it', async () => {
    const r = await c('DELETE', `/Users/${user.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(user);
    expect(await lastEvent()).toMatchObject({ event: 'user.deleted', data: { id: user.id, raw: user } });
    expect((await c('GET', '/Users?filter=userName eq "jackson@boxyhq.com"')).body.totalResults).toBe(0);
  });
});

describe('errors', () => {
  it('401s a wrong or missing secret, 404s an unknown directory', async () => {
    for (const secret of ['wrong', null, `${dir.scim.secret}x`]) {
      const r = await scimClient(s, dir, secret)('GET', '/Users');
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ schemas: [ERROR], detail: 'Unauthorized', status: '401' });
    }
    const other = {
      ...dir,
      scim: { ...dir.scim, endpoint: dir.scim.endpoint?.replace(dir.id, '00000000-0000-4000-8000-00000000000a') },
    };
    const r = await scimClient(s, other)('GET', '/Users');
    expect(r.status).toBe(404);
    expect(r.body.detail).toBe('Directory configuration not found.');
  });

  it('404s a method without a resource, and unknown resource types with {}', async () => {
    expect((await c('DELETE', '/Users')).body).toEqual({ schemas: [ERROR], detail: 'Not found', status: '404' });
    // Jackson's answer to a resource type it does not serve (discovery is served: scim-discovery.test.ts).
    const r = await c('GET', '/Bulk');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({});
  });

  it('answers malformed JSON with a SCIM 400 invalidSyntax', async () => {
    const r = await c('POST', '/Users', '{"userName":');
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidSyntax' });
  });
});
