/**
 * SCIM discovery (RFC 7644 §4): /ServiceProviderConfig, /Schemas, /ResourceTypes under a directory's
 * SCIM base, and each claim of those documents held against what the SCIM routes do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';

const CORE = 'urn:ietf:params:scim:schemas:core:2.0';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
/** A small page limit, so that maxResults can be held against a page. */
const PAGE_LIMIT = 3;

interface SchemaAttribute {
  name: string;
  type: string;
  multiValued: boolean;
  required: boolean;
  mutability: string;
  returned: string;
  uniqueness: string;
  subAttributes?: SchemaAttribute[];
}

let s: TestServer;
let dir: DirectoryRecord;
let c: ReturnType<typeof scimClient>;
let base: string;

beforeAll(async () => {
  s = await startDsyncServer({ 'dsync.page_limit': PAGE_LIMIT });
  dir = await createDirectory(s);
  c = scimClient(s, dir);
  base = dir.scim.endpoint ?? '';
});
afterAll(async () => {
  await s?.close();
});

describe('the discovery documents', () => {
  it('/ServiceProviderConfig says what the endpoint supports', async () => {
    const r = await c('GET', '/ServiceProviderConfig');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(r.body).toEqual({
      schemas: [`${CORE}:ServiceProviderConfig`],
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: PAGE_LIMIT },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: false },
      authenticationSchemes: [expect.objectContaining({ type: 'oauthbearertoken', primary: true })],
      meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
    });
  });

  it('/Schemas lists the User and Group schemas, each also at its own URN', async () => {
    const r = await c('GET', '/Schemas');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ schemas: [LIST], totalResults: 3, itemsPerPage: 3, startIndex: 1 });
    const ids = r.body.Resources.map((x: { id: string }) => x.id);
    expect(ids).toEqual([`${CORE}:User`, ENTERPRISE, `${CORE}:Group`]);
    for (const schema of r.body.Resources) {
      const one = await c('GET', `/Schemas/${schema.id}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(schema);
      expect(schema.meta).toEqual({ resourceType: 'Schema', location: `${base}/Schemas/${schema.id}` });
    }
    const missing = await c('GET', '/Schemas/urn:example:nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ schemas: [ERROR], status: '404' });
  });

  it('/ResourceTypes lists Users and Groups, each also by its id', async () => {
    const r = await c('GET', '/ResourceTypes');
    expect(r.status).toBe(200);
    expect(
      r.body.Resources.map((x: { id: string; endpoint: string; schema: string }) => [x.id, x.endpoint, x.schema]),
    ).toEqual([
      ['User', '/Users', `${CORE}:User`],
      ['Group', '/Groups', `${CORE}:Group`],
    ]);
    expect(r.body.Resources[0].schemaExtensions).toEqual([{ schema: ENTERPRISE, required: false }]);
    expect((await c('GET', '/ResourceTypes/Group')).body).toEqual(r.body.Resources[1]);
    expect((await c('GET', '/ResourceTypes/Bulk')).status).toBe(404);
  });

  it('asks for the bearer secret like the rest of the endpoint, and reads with GET only', async () => {
    for (const path of ['/ServiceProviderConfig', '/Schemas', '/ResourceTypes']) {
      expect((await scimClient(s, dir, null)('GET', path)).status).toBe(401);
      expect((await scimClient(s, dir, 'wrong')('GET', path)).status).toBe(401);
      const post = await c('POST', path, {});
      expect(post.status).toBe(405);
      expect(post.body).toMatchObject({ schemas: [ERROR], status: '405' });
    }
    const other = await createDirectory(s, { tenant: 'other' });
    expect((await scimClient(s, other, dir.scim.secret)('GET', '/Schemas')).status).toBe(401);
  });

  it('answers through the library’s requests.handle too', async () => {
    const r = await s.container.dsync.controller().requests.handle({
      method: 'GET',
      directoryId: dir.id,
      resourceType: 'ServiceProviderConfig',
      apiSecret: dir.scim.secret,
      body: undefined,
      query: {},
    });
    expect(r.status).toBe(200);
    expect(r.data).toMatchObject({ schemas: [`${CORE}:ServiceProviderConfig`] });
  });
});

describe('each claim, held against the SCIM routes', () => {
  it('every resource type’s endpoint answers a list with the same bearer', async () => {
    const types = (await c('GET', '/ResourceTypes')).body.Resources as Array<{ endpoint: string }>;
    for (const t of types) {
      const r = await c('GET', t.endpoint);
      expect(r.status, t.endpoint).toBe(200);
      expect(r.body.schemas).toEqual([LIST]);
    }
  });

  it('patch: supported; bulk: not (no /Bulk); sort: ignored; etag: none; filter: at most maxResults per page', async () => {
    const config = (await c('GET', '/ServiceProviderConfig')).body;
    const d = await createDirectory(s, { tenant: 'claims' });
    const k = scimClient(s, d);
    const ids: string[] = [];
    for (const n of ['b', 'a', 'd', 'c']) {
      const r = await k('POST', '/Users', { userName: `${n}@example.com`, name: { givenName: n, familyName: 'X' } });
      expect(r.status).toBe(201);
      expect(r.headers.get('etag')).toBeNull();
      ids.push(r.body.id);
    }
    expect(config.patch.supported).toBe(true);
    const patched = await k('PATCH', `/Users/${ids[0]}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(patched.status).toBe(200);
    expect(patched.body.active).toBe(false);

    expect(config.bulk.supported).toBe(false);
    expect((await k('POST', '/Bulk', { schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'] })).status).toBe(
      404,
    );

    expect(config.sort.supported).toBe(false);
    const plain = await k('GET', '/Users?count=100');
    const sorted = await k('GET', '/Users?count=100&sortBy=userName&sortOrder=ascending');
    expect(sorted.body.Resources.map((u: { id: string }) => u.id)).toEqual(
      plain.body.Resources.map((u: { id: string }) => u.id),
    );

    expect(config.filter.maxResults).toBe(PAGE_LIMIT);
    expect(plain.body.totalResults).toBe(4);
    expect(plain.body.Resources).toHaveLength(config.filter.maxResults);
    const filtered = await k(
      'GET',
      `/Users?filter=${encodeURIComponent('name.familyName eq "X" and not (userName eq "a@example.com")')}`,
    );
    expect(filtered.body.totalResults).toBe(3);

    expect(config.etag.supported).toBe(false);
    expect((await k('GET', `/Users/${ids[1]}`)).headers.get('etag')).toBeNull();
  });

  it('the User schema: what it lists is kept, required and unique as it says; a write-only password is never returned', async () => {
    const user = (await c('GET', `/Schemas/${CORE}:User`)).body.attributes as SchemaAttribute[];
    const byName = new Map(user.map((a) => [a.name, a]));
    expect([...byName.keys()]).toEqual(['userName', 'name', 'emails', 'active', 'password', 'roles', 'groups']);
    const group = (await c('POST', '/Groups', { displayName: 'Joined from the user' })).body;
    const body = {
      schemas: [`${CORE}:User`],
      userName: 'schema.user@example.com',
      name: { givenName: 'Schema', familyName: 'User', formatted: 'Schema User' },
      emails: [{ value: 'schema.user@example.com', type: 'work', primary: true }],
      active: true,
      password: 'never-kept-1',
      roles: [{ value: 'admin', display: 'Admin', type: 'x' }],
      groups: [{ value: group.id, display: 'Joined from the user' }],
    };
    const created = await c('POST', '/Users', body);
    expect(created.status).toBe(201);
    const got = (await c('GET', `/Users/${created.body.id}`)).body;
    for (const a of user) {
      if (a.returned === 'never') expect(got, a.name).not.toHaveProperty(a.name);
      else expect(got[a.name], a.name).toEqual(body[a.name as keyof typeof body]);
    }
    expect(byName.get('password')).toMatchObject({ mutability: 'writeOnly', returned: 'never' });
    // groups: joined (test/http/dsync/user-groups.test.ts has the rules).
    const lib = s.container.dsync.controller().groups.setTenantAndProduct(dir.tenant, dir.product);
    expect((await lib.get(group.id)).data?.members.map((m) => m.user_id)).toEqual([created.body.id]);
    // required: userName
    expect(user.filter((a) => a.required).map((a) => a.name)).toEqual(['userName']);
    // uniqueness server: userName
    expect(user.filter((a) => a.uniqueness === 'server').map((a) => a.name)).toEqual(['userName']);
    const again = await c('POST', '/Users', { ...body, userName: 'SCHEMA.USER@example.com' });
    expect(again.status).toBe(409);
  });

  it('the Group schema: displayName required and unique, members by user id', async () => {
    const group = (await c('GET', `/Schemas/${CORE}:Group`)).body.attributes as SchemaAttribute[];
    expect(group.map((a) => [a.name, a.required, a.uniqueness])).toEqual([
      ['displayName', true, 'server'],
      ['members', false, 'none'],
    ]);
    const u = (await c('POST', '/Users', { userName: 'member.schema@example.com' })).body;
    const g = await c('POST', '/Groups', { displayName: 'Schema Group', members: [{ value: u.id }] });
    expect(g.status).toBe(201);
    expect((await c('POST', '/Groups', { displayName: 'schema group' })).status).toBe(409);
    const members = await c('GET', `/Groups?filter=${encodeURIComponent(`members[value eq "${u.id}"]`)}`);
    expect(members.body.Resources.map((x: { id: string }) => x.id)).toEqual([g.body.id]);
  });
});
