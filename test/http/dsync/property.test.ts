/**
 * Property-based: malformed SCIM bodies, filters and PATCH operations thrown at the HTTP routes.
 * Every answer must be a SCIM error with a 4xx status (never a 500), and nothing stored may change
 * (a PATCH whose last operation is bad rolls back the valid ones before it). Runs are bounded in
 * number and in time.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { createDirectory, type Reply, scimClient, snapshot, startDsyncServer, v1 } from '../../helpers/dsync.ts';

const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const RUNS = { numRuns: 120, interruptAfterTimeLimit: 25_000, markInterruptAsFailure: false };

let s: TestServer;
let dir: DirectoryRecord;
let c: ReturnType<typeof scimClient>;
let userId: string;
let groupId: string;
let before: string;

beforeAll(async () => {
  s = await startDsyncServer();
  dir = await createDirectory(s, { type: 'azure-scim-v2' });
  c = scimClient(s, dir);
  userId = (
    await c('POST', '/Users', { userName: 'seed@example.com', emails: [{ value: 'seed@example.com', type: 'work' }] })
  ).body.id;
  groupId = (await c('POST', '/Groups', { displayName: 'Seed', members: [{ value: userId }] })).body.id;
  before = await snapshot(s, dir.id);
});
afterAll(async () => {
  await s?.close();
});

async function expectScimError(r: Reply, what: unknown) {
  const label = JSON.stringify(what).slice(0, 300);
  expect(r.status, label).toBeGreaterThanOrEqual(400);
  expect(r.status, label).toBeLessThan(500);
  expect(r.headers.get('content-type'), label).toMatch(/^application\/scim\+json/);
  expect(r.body, label).toMatchObject({ schemas: [ERROR], status: String(r.status) });
  expect(typeof r.body.detail, label).toBe('string');
  expect(await snapshot(s, dir.id), label).toBe(before);
}

const notBoolean = fc.oneof(
  fc.integer(),
  fc.string().filter((v) => !['true', 'false'].includes(v.trim().toLowerCase())),
  fc.array(fc.jsonValue(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue(), { maxKeys: 3 }),
);
const word = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,8}$/);
const quoted = fc.string({ maxLength: 12 }).map((v) => JSON.stringify(v));
const attr = fc.constantFrom('userName', 'externalId', 'displayName', 'emails.value', 'name.givenName', 'title');
const cmp = fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt');
const validFilter = fc.tuple(attr, cmp, quoted).map(([a, o, v]) => `${a} ${o} ${v}`);

describe('malformed request bodies', () => {
  const badUser = fc.oneof(
    // not JSON at all: whatever is between the braces, a trailing comma never parses
    fc.string({ maxLength: 40 }).map((x) => `{${x},}`),
    // JSON, but not an object
    fc
      .oneof(fc.array(fc.jsonValue(), { maxLength: 4 }), fc.integer(), fc.constant(null), fc.string())
      .map((v) => JSON.stringify(v)),
    // an object with neither userName nor emails
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }).map((o) => {
      for (const k of ['userName', 'emails', 'rawAttributes', 'userId', 'active']) delete o[k];
      return JSON.stringify(o);
    }),
    // an active that is not a boolean
    fc.tuple(fc.emailAddress(), notBoolean).map(([u, a]) => JSON.stringify({ userName: u, active: a })),
    // a NUL character, which PostgreSQL cannot store
    fc.string({ maxLength: 10 }).map((x) => JSON.stringify({ userName: `n${x}\u0000@example.com` })),
    fc.string({ maxLength: 10 }).map((x) => JSON.stringify({ userName: 'k@example.com', [`k${x}\u0000`]: 1 })),
    // a prototype-reaching key
    fc.constantFrom(
      '{"userName":"p@x.com","__proto__":{"polluted":1}}',
      '{"userName":"p@x.com","name":{"constructor":{"prototype":{"x":1}}}}',
    ),
  );

  it('POST /Users and PUT /Users/{id} answer SCIM 4xx and store nothing', async () => {
    await fc.assert(
      fc.asyncProperty(badUser, fc.boolean(), async (body, put) => {
        const r = put ? await c('PUT', `/Users/${userId}`, body) : await c('POST', '/Users', body);
        await expectScimError(r, body);
      }),
      RUNS,
    );
  });

  it('POST /Groups answers SCIM 4xx without a usable displayName or with bad members', async () => {
    const badGroup = fc.oneof(
      fc.constant({}),
      fc.record({
        displayName: fc.oneof(
          fc.constant(''),
          fc.integer(),
          fc.constant(null),
          fc.array(fc.string(), { maxLength: 2 }),
        ),
      }),
      fc.record({
        displayName: fc
          .string({ minLength: 1, maxLength: 10 })
          .filter((v) => v.trim() !== '' && v.toLowerCase() !== 'seed'),
        members: fc.array(
          fc.oneof(fc.record({ display: fc.string() }), fc.record({ value: fc.oneof(fc.constant(''), fc.boolean()) })),
          {
            minLength: 1,
            maxLength: 3,
          },
        ),
      }),
    );
    await fc.assert(
      fc.asyncProperty(badGroup, async (body) => {
        await expectScimError(await c('POST', '/Groups', body), body);
      }),
      RUNS,
    );
  });
});

describe('malformed filters', () => {
  const malformed = fc.oneof(
    fc.tuple(attr, cmp).map(([a, o]) => `${a} ${o}`),
    fc.tuple(validFilter, fc.constantFrom('and', 'or', 'and not')).map(([f, l]) => `${f} ${l}`),
    validFilter.map((f) => `(${f}`),
    fc.tuple(attr, validFilter).map(([a, f]) => `${a}[${f}`),
    fc
      .tuple(
        attr,
        word.filter(
          (w) =>
            !['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'pr', 'and', 'or', 'not'].includes(w.toLowerCase()),
        ),
        quoted,
      )
      .map(([a, o, v]) => `${a} ${o} ${v}`),
    fc
      .tuple(
        attr,
        word.filter((w) => !['true', 'false', 'null'].includes(w)),
      )
      .map(([a, w]) => `${a} eq ${w}`),
    fc.tuple(attr, quoted).map(([a, v]) => `${a} co ${v.length > 2 ? 5 : 'true'}`),
    fc.constantFrom(
      '__proto__.x eq "1"',
      'constructor.prototype eq "1"',
      'userName eq "a" and (',
      'userName eq "\u0000"',
    ),
  );

  it('GET /Users and /Groups answer 400 invalidFilter', async () => {
    await fc.assert(
      fc.asyncProperty(malformed, fc.boolean(), async (filter, groups) => {
        const r = await c('GET', `/${groups ? 'Groups' : 'Users'}?filter=${encodeURIComponent(filter)}`);
        await expectScimError(r, filter);
        expect(r.body.scimType, filter).toBe('invalidFilter');
      }),
      RUNS,
    );
  });

  it('never fail with a 5xx on any filter text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 60 }), async (filter) => {
        const r = await c('GET', `/Users?filter=${encodeURIComponent(filter)}`);
        expect([200, 400], filter).toContain(r.status);
        if (r.status === 400) expect(r.body.scimType).toBe('invalidFilter');
      }),
      RUNS,
    );
    expect(await snapshot(s, dir.id)).toBe(before);
  });
});

describe('odd query and path parameters', () => {
  const text = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.constantFrom('\u0000', '99999999999999999999999', '-1', '1e400', 'NaN'),
  );

  it('startIndex, count and resource ids never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(text, text, text, async (start, count, id) => {
        const list = await c(
          'GET',
          `/Users?startIndex=${encodeURIComponent(start)}&count=${encodeURIComponent(count)}`,
        );
        expect(list.status, `${start} ${count}`).toBe(200);
        const one = await c('GET', `/Groups/${encodeURIComponent(id || 'x')}`);
        expect([200, 404], id).toContain(one.status);
      }),
      RUNS,
    );
  });

  it('v1 read parameters never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(text, text, text, async (tenant, product, directoryId) => {
        const q = new URLSearchParams({ tenant, product, directoryId, pageOffset: tenant, pageLimit: product });
        for (const path of [`/users?${q}`, `/groups?${q}`, `/users/${encodeURIComponent(tenant || 'x')}?${q}`]) {
          const r = await v1(s)('GET', path);
          expect(r.status, path).toBeLessThan(500);
        }
        const d = await v1(s)('POST', '', { tenant, product, name: directoryId });
        expect(d.status, JSON.stringify([tenant, product])).toBeLessThan(500);
      }),
      { ...RUNS, numRuns: 60 },
    );
  });
});

describe('malformed PATCH operations', () => {
  const validOp = fc.oneof(
    fc.record({ op: fc.constantFrom('replace', 'Replace', 'add'), path: fc.constant('title'), value: fc.string() }),
    fc.record({ op: fc.constant('replace'), value: fc.constant({ active: false }) }),
    fc.record({ op: fc.constant('add'), path: fc.constant('members'), value: fc.constant([]) }),
  );
  const badAny = [
    fc.record({
      op: fc.string().filter((o) => !['add', 'replace', 'remove'].includes(o.trim().toLowerCase())),
      path: fc.constant('title'),
      value: fc.string(),
    }),
    fc.record({ op: fc.constantFrom('add', 'replace'), path: fc.constant('title') }),
    fc.record({
      op: fc.constantFrom('add', 'remove'),
      path: fc.oneof(fc.integer(), fc.constant({}), fc.constant([])),
      value: fc.constant('x'),
    }),
    fc.record({
      op: fc.constant('replace'),
      path: fc.constantFrom(
        '__proto__.polluted',
        'constructor.prototype.polluted',
        'name..givenName',
        'emails[type eq]',
        'emails[type eq "work"',
      ),
      value: fc.constant('x'),
    }),
    fc.record({
      op: fc.constantFrom('add', 'replace'),
      value: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 })),
    }),
    fc.oneof(fc.constant(null), fc.integer(), fc.string()),
  ];
  const badForUsers = fc.oneof(
    ...badAny,
    fc.record({ op: fc.constant('replace'), path: fc.constant('active'), value: notBoolean }),
  );
  const badForGroups = fc.oneof(
    ...badAny,
    fc.record({
      op: fc.constant('replace'),
      path: fc.constant('displayName'),
      value: fc.oneof(fc.constant(''), fc.integer()),
    }),
    fc.constant({ op: 'remove', path: 'displayName' }),
    fc.record({ op: fc.constant('add'), path: fc.constant('members'), value: fc.constant([{ display: 'no value' }]) }),
  );
  const body = (bad: fc.Arbitrary<unknown>) =>
    fc.oneof(
      fc.tuple(fc.array(validOp, { maxLength: 3 }), bad).map(([ok, b]) => ({ Operations: [...ok, b] })),
      fc.oneof(
        fc.constant({}),
        fc.record({ Operations: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.constant({})) }),
      ),
    );

  it('PATCH /Users/{id} answers SCIM 4xx and rolls back every operation', async () => {
    await fc.assert(
      fc.asyncProperty(body(badForUsers), async (b) => {
        await expectScimError(await c('PATCH', `/Users/${userId}`, b), b);
      }),
      RUNS,
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('PATCH /Groups/{id} answers SCIM 4xx and rolls back every operation', async () => {
    await fc.assert(
      fc.asyncProperty(body(badForGroups), async (b) => {
        await expectScimError(await c('PATCH', `/Groups/${groupId}`, b), b);
      }),
      RUNS,
    );
  });
});
