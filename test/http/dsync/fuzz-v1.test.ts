/**
 * Fuzz (fast-check, fixed seed, bounded runs): malformed requests against Jackson's directory sync
 * management API (`/api/v1/dsync`). Writes are refused with Jackson's `{error: {message}}` and a 4xx
 * status; reads and deletes of what does not exist answer Jackson's empty success or a 4xx; never a
 * 500 or a stack trace, and nothing stored changes. (SCIM is fuzzed in property.test.ts.)
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { API_KEY, createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import {
  type Answer,
  anyJson,
  brokenNonObject,
  expectErrorBody,
  expectNoLeak,
  fuzzParams,
  label,
  seg,
  send,
  watchStoredState,
  wrong,
} from '../../helpers/fuzz.ts';

let s: TestServer;
let dir: DirectoryRecord;

beforeAll(async () => {
  s = await startDsyncServer();
  dir = await createDirectory(s);
  const c = scimClient(s, dir);
  const u = await c('POST', '/Users', { userName: 'fuzz@example.com', emails: [{ value: 'fuzz@example.com' }] });
  expect(u.status).toBe(201);
});
afterAll(() => s?.close());
const { unchanged, rebase } = watchStoredState(() => s);

const v1 = (path: string, init: RequestInit & { key?: string | null } = {}) => {
  const { key = API_KEY, ...rest } = init;
  return send(`${s.adminUrl}/api/v1/dsync${path}`, {
    ...rest,
    headers: {
      ...(key === null ? {} : { authorization: `Api-Key ${key}` }),
      ...(rest.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
  });
};

/** A Jackson error, or an empty success (`{data: null | {} | []}`) for a read or delete of nothing. */
function expectRefusedOrEmpty(r: Answer, what: string) {
  if (r.status < 300) {
    expectNoLeak(r, what);
    const body = JSON.parse(r.text) as { data: unknown };
    const d = body.data;
    // Nothing found or done: null, [], {} or counts of zero (`{jobs: 0, batches: 0}` of a retry).
    const empty =
      d === null ||
      (Array.isArray(d) && d.length === 0) ||
      (typeof d === 'object' && Object.values(d as object).every((v) => v === 0));
    expect(empty, `${what} → ${r.text}`).toBe(true);
    return;
  }
  expectErrorBody(r, 'dsync', what);
}

describe('/api/v1/dsync', () => {
  it('refuses invalid directories and updates, and every request without the right API key', async () => {
    const good = { tenant: 'fuzz', product: 'crm', type: 'okta-scim-v2' };
    const create = fc.oneof(
      wrong.map((type) => ({ ...good, type })),
      fc
        .constantFrom('tenant', 'product')
        .chain((k) => fc.constantFrom('', null, 5, [], {}).map((v) => ({ ...good, [k]: v }))),
      wrong.map((t) => ({ ...good, tenant: `${t}:x` })),
      wrong.map((w) => ({ ...good, webhook_url: `zz://${w}`, webhook_secret: 's' })),
      fc.constant({ ...good, name: 5 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({
            kind: fc.constant('create'),
            body: fc.tuple(create, fc.dictionary(fc.string({ maxLength: 6 }), anyJson, { maxKeys: 2 })),
          }),
          fc.record({ kind: fc.constant('broken'), body: brokenNonObject, verb: fc.constantFrom('POST', 'PATCH') }),
          fc.record({
            kind: fc.constant('patch-unknown'),
            id: wrong,
            body: fc.dictionary(fc.constantFrom('name', 'deactivated', 'webhook_url', 'log_webhook_events'), anyJson, {
              maxKeys: 2,
            }),
          }),
          fc.record({
            kind: fc.constant('patch-invalid'),
            body: fc.constantFrom(
              { webhook_url: 'not a url', webhook_secret: 'x' },
              { name: 5 },
              { webhook_url: 'ftp://x.example/' },
            ),
          }),
          fc.record({
            kind: fc.constant('unauthenticated'),
            key: fc.option(wrong.filter((k) => /^[\x21-\x7e]*$/.test(k))),
            path: fc.constantFrom('', `/DIR`, '/users?directoryId=DIR', '/events?directoryId=DIR', '/webhooks/retry'),
            verb: fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE'),
          }),
        ),
        async (c) => {
          const what = label(c);
          let r: Answer;
          if (c.kind === 'create')
            r = await v1('', { method: 'POST', body: JSON.stringify({ ...c.body[1], ...c.body[0] }) });
          else if (c.kind === 'broken')
            r = await v1(c.verb === 'POST' ? '' : `/${dir.id}`, { method: c.verb, body: c.body });
          else if (c.kind === 'patch-unknown')
            r = await v1(`/${seg(c.id)}`, { method: 'PATCH', body: JSON.stringify(c.body) });
          else if (c.kind === 'patch-invalid')
            r = await v1(`/${dir.id}`, { method: 'PATCH', body: JSON.stringify(c.body) });
          else r = await v1(c.path.replace('DIR', dir.id), { method: c.verb, key: c.key });
          // Jackson reads a PATCH body that is not an object as `{}`: an update of no field, which
          // succeeds and (as Jackson's) rewrites the record; it is not an error, so not checked below.
          if (c.kind === 'broken' && c.verb === 'PATCH' && r.status === 200) {
            expectNoLeak(r, what);
            expect(JSON.parse(r.text).data.id, what).toBe(dir.id);
            await rebase();
            return;
          }
          expectErrorBody(r, 'dsync', what);
          if (c.kind === 'unauthenticated') expect(r.status, what).toBe(401);
          await unchanged(what);
        },
      ),
      fuzzParams(60),
    );
  });

  it('reads, deletes and retries with junk parameters find, change and send nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          'GET /',
          'GET /product',
          'GET /ID',
          'DELETE /ID',
          'GET /users',
          'GET /users/ID',
          'GET /groups',
          'GET /groups/ID',
          'GET /events',
          'GET /events/ID',
          'DELETE /events',
          'POST /webhooks/retry',
        ),
        wrong,
        fc.dictionary(
          fc.constantFrom(
            'tenant',
            'product',
            'directoryId',
            'offset',
            'limit',
            'pageOffset',
            'pageLimit',
            'pageToken',
            'x',
          ),
          wrong,
          { maxKeys: 3 },
        ),
        async (route, id, q) => {
          const [verb, path] = route.split(' ') as [string, string];
          // Never the real directory: the scope parameters are junk too.
          const query = new URLSearchParams(q).toString();
          const r = await v1(`${path.replace('ID', seg(id))}${query ? `?${query}` : ''}`, { method: verb });
          const what = label({ route, id, q });
          expectRefusedOrEmpty(r, what);
          await unchanged(what);
        },
      ),
      fuzzParams(60),
    );
  });
});
