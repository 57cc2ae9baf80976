/**
 * The admin API families `dsync` and `jobs` (`serve.admin.auth`), through real HTTP on real
 * PostgreSQL:
 *
 * - directory sync's management API (`/api/v1/dsync/…`) keeps Jackson's Api-Key and, with admin
 *   authentication on, also takes an admin credential of the family `dsync` (an API key or a
 *   client_credentials token with `gatehouse:admin:dsync` or `gatehouse:admin`): 403 without the
 *   family, 401 without a credential, in Jackson's `{error: {message}}` shape, under every spelling
 *   of the path; audit events name the caller; SCIM keeps its directory secret;
 * - the jobs API (`GET /admin/jobs/failed`, `POST /admin/jobs/retry`) lists a job that really failed
 *   (its last error without secrets) and re-enqueues it, refuses callers without `jobs`, answers a
 *   bad query or body with 400 in Hydra's error shape, and is open while admin authentication is off.
 */
import { createHash } from 'node:crypto';
import type { Runner } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { manualClock } from '../../../src/core/clock.ts';
import { withTx } from '../../../src/core/db/tx.ts';
import { HERODOT } from '../../../src/core/errors.ts';
import { hashAdminKey } from '../../../src/core/http/admin-auth.ts';
import { enqueue } from '../../../src/core/jobs/enqueue.ts';
import { defineTask } from '../../../src/core/jobs/task.ts';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { eventually, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { API_KEY, scimClient } from '../../helpers/dsync.ts';
import { tokenRequest } from '../../helpers/tokens.ts';

const ALL_KEY = 'gha_families-test-key-every-family-0001';
const DSYNC_KEY = 'gha_families-test-key-dsync-only-00002';
const CLIENTS_KEY = 'gha_families-test-key-clients-only-0003';
const JOBS_KEY = 'gha_families-test-key-jobs-and-audit-04';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 8);
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const apiKey = { authorization: `Api-Key ${API_KEY}` };
const CHALLENGE = 'Bearer realm="gatehouse-admin"';
/** What the failing task's error carries: none of it may reach the jobs API's answer. */
const LEAKY = 'ory_at_leakedtokenvalue123.sig';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

/** A raw request (exact wire checks): `body` is sent as JSON unless it is a string; the answer parsed when JSON. */
async function send(
  url: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

let on: TestServer;
let off: TestServer;
let runner: Runner;
const flaky = { failing: true, ran: 0 };
beforeAll(async () => {
  [on, off] = await Promise.all([
    startTestServer({
      overrides: {
        'serve.admin.auth.enabled': true,
        'serve.admin.auth.api_keys': [
          hashAdminKey(ALL_KEY),
          `${hashAdminKey(DSYNC_KEY)}:dsync`,
          `${hashAdminKey(CLIENTS_KEY)}:clients`,
          `${hashAdminKey(JOBS_KEY)}:jobs,audit`,
        ],
        'dsync.api_keys': [API_KEY],
        'audit.enabled': true,
        // The suite's own failures all come from 127.0.0.1; the limiter has a test of its own below.
        'rate_limit.failed_auth.per_address': 10_000,
      },
    }),
    startTestServer({ overrides: { 'dsync.api_keys': [API_KEY] } }),
  ]);
  runner = await on.startWorker({
    taskList: {
      test_flaky: defineTask(z.object({ note: z.string() }), async () => {
        if (flaky.failing) throw new Error(`receiver unavailable (Authorization: Bearer ${LEAKY})`);
        flaky.ran++;
      }).bindTo(on.container),
    },
  });
});
afterAll(async () => {
  await runner?.stop();
  await Promise.all([on?.close(), off?.close()]);
});

/** A client_credentials client (made with the all-families key) and an access token of it for `scope`. */
async function adminToken(scope: string) {
  const created = await send(
    `${on.adminUrl}/admin/clients`,
    'POST',
    { grant_types: ['client_credentials'], scope, token_endpoint_auth_method: 'client_secret_basic' },
    bearer(ALL_KEY),
  );
  expect(created.status).toBe(201);
  const client = created.body as { client_id: string; client_secret: string };
  const token = await tokenRequest(on, client, { grant_type: 'client_credentials', scope });
  expect(token.status).toBe(200);
  return { clientId: client.client_id, token: token.body.access_token as string };
}

const dsync = (s: TestServer, method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  send(`${s.adminUrl}/api/v1/dsync${path}`, method, body, headers);

const newDirectory = async (headers: Record<string, string>, tenant: string) =>
  dsync(on, 'POST', '', headers, { tenant, product: 'families', type: 'okta-scim-v2' });

describe('directory sync’s management API with admin authentication on', () => {
  it('keeps taking Jackson’s Api-Key, exactly as before', async () => {
    const created = await newDirectory(apiKey, 'by-api-key');
    expect(created.status).toBe(201);
    const list = await dsync(on, 'GET', '?tenant=by-api-key&product=families', apiKey);
    expect(list.status).toBe(200);
    expect((list.body as { data: unknown[] }).data).toHaveLength(1);
    // Jackson's gateway takes the second token of the header whatever the scheme.
    expect((await dsync(on, 'GET', '?tenant=by-api-key&product=families', bearer(API_KEY))).status).toBe(200);
  });

  it('takes a client_credentials token with gatehouse:admin:dsync, or gatehouse:admin', async () => {
    const { token } = await adminToken('gatehouse:admin:dsync');
    const created = await newDirectory(bearer(token), 'by-dsync-token');
    expect(created.status).toBe(201);
    const id = (created.body as { data: DirectoryRecord }).data.id;
    const read = await dsync(on, 'GET', `/${id}`, bearer(token));
    expect(read.status).toBe(200);
    expect((read.body as { data: DirectoryRecord }).data.tenant).toBe('by-dsync-token');
    const { token: all } = await adminToken('gatehouse:admin');
    expect((await dsync(on, 'GET', `/${id}`, bearer(all))).status).toBe(200);
    expect((await dsync(on, 'DELETE', `/${id}`, bearer(all))).status).toBe(200);
  });

  it('takes an admin API key limited to dsync, and one of every family', async () => {
    expect((await newDirectory(bearer(DSYNC_KEY), 'by-dsync-key')).status).toBe(201);
    const list = await dsync(on, 'GET', '?tenant=by-dsync-key&product=families', bearer(ALL_KEY));
    expect(list.status).toBe(200);
    expect((list.body as { data: unknown[] }).data).toHaveLength(1);
  });

  it('refuses a credential without the dsync family with 403 in Jackson’s error shape', async () => {
    const { token } = await adminToken('gatehouse:admin:clients');
    for (const credential of [token, CLIENTS_KEY, JOBS_KEY]) {
      const r = await dsync(on, 'GET', '?tenant=by-api-key&product=families', bearer(credential));
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: { message: expect.stringContaining('gatehouse:admin:dsync') } });
      expect(r.headers.get('www-authenticate')).toBe(
        `${CHALLENGE}, error="insufficient_scope", scope="gatehouse:admin:dsync"`,
      );
      expect((await newDirectory(bearer(credential), 'never-made')).status).toBe(403);
    }
    // And the dsync key is no key of the other families.
    expect((await send(`${on.adminUrl}/admin/clients`, 'GET', undefined, bearer(DSYNC_KEY))).status).toBe(403);
  });

  it('refuses a request without a credential, or with a wrong one, with 401 in Jackson’s error shape', async () => {
    const none = await dsync(on, 'GET', '?tenant=a&product=b', {});
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: { message: 'Unauthorized' } });
    expect(none.headers.get('www-authenticate')).toBe(CHALLENGE);
    const wrong = await dsync(on, 'GET', '?tenant=a&product=b', bearer('gha_not-a-configured-key-0000000'));
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ error: { message: 'Unauthorized' } });
    expect(wrong.headers.get('www-authenticate')).toBe(`${CHALLENGE}, error="invalid_token"`);
    expect(wrong.text).not.toContain('not-a-configured-key');
    const wrongApiKey = await dsync(on, 'GET', '?tenant=a&product=b', { authorization: 'Api-Key not-the-key' });
    expect(wrongApiKey.status).toBe(401);
    // A token without an admin scope is no admin credential.
    const { token } = await adminToken('read');
    expect((await dsync(on, 'GET', '?tenant=a&product=b', bearer(token))).status).toBe(401);
    // An admin key under another scheme is no admin credential (nor a Jackson key).
    expect((await dsync(on, 'GET', '?tenant=a&product=b', { authorization: `Basic ${DSYNC_KEY}` })).status).toBe(401);
  });

  it('no other spelling of a path gets past the guard', async () => {
    const made = await newDirectory(bearer(DSYNC_KEY), 'spelled');
    const id = (made.body as { data: DirectoryRecord }).data.id;
    const { token: clients } = await adminToken('gatehouse:admin:clients');
    const same = [
      '/api/v1/dsync/',
      '/api/v1//dsync',
      '//api/v1/dsync',
      '/api/v1/dsync//',
      '/api/v1/%64sync',
      '/api/v1/./dsync',
      '/api/v1/zz/../dsync',
      '/api/v1/%2e/dsync',
      `/api/v1/dsync/${id}/`,
      `/api/v1//dsync/${id}`,
      `/api/v1/dsync/users/`,
    ];
    const other = ['/API/v1/dsync', '/api/V1/dsync', '/api/v1/DSYNC', `/api/v1/dsync%2F${id}`, `/api/v1%2Fdsync/${id}`];
    for (const path of [...same, ...other]) {
      const url = `${on.adminUrl}${path}${path.includes('users') ? `?directoryId=${id}` : ''}`;
      const query = url.includes('?') ? '' : '?tenant=spelled&product=families';
      for (const headers of [{}, bearer(clients), bearer(CLIENTS_KEY), { authorization: 'Api-Key wrong' }]) {
        const r = await send(`${url}${query}`, 'GET', undefined, headers);
        const where = `${path} with ${JSON.stringify(headers)}`;
        if (same.includes(path)) expect([401, 403], where).toContain(r.status);
        else expect([401, 403, 404, 405], where).toContain(r.status);
      }
      // The right credential reaches the route under a spelling of the same path.
      if (same.includes(path)) {
        const ok = await send(`${url}${query}`, 'GET', undefined, bearer(DSYNC_KEY));
        expect(ok.status, path).toBe(200);
      }
    }
  });

  it('audit events of calls with an admin credential name the caller, as the other families do', async () => {
    const byKey = await newDirectory(bearer(DSYNC_KEY), 'audited-by-key');
    const { clientId, token } = await adminToken('gatehouse:admin:dsync');
    const byToken = await newDirectory(bearer(token), 'audited-by-token');
    const byApiKey = await newDirectory(apiKey, 'audited-by-api-key');
    const ids = [byKey, byToken, byApiKey].map((r) => (r.body as { data: DirectoryRecord }).data.id);
    const events = await send(
      `${on.adminUrl}/admin/audit/events?type=dsync.directory.created&page_size=100`,
      'GET',
      undefined,
      bearer(JOBS_KEY),
    );
    expect(events.status).toBe(200);
    const list = events.body as Array<{ actor: { kind: string; id: string | null }; target: { id: string } }>;
    const actorOf = (id: string | undefined) => list.find((e) => e.target.id === id)?.actor;
    expect(actorOf(ids[0])).toEqual({ kind: 'api_key', id: idOf(DSYNC_KEY) });
    expect(actorOf(ids[1])).toEqual({ kind: 'client', id: clientId });
    // Jackson's Api-Key, as before: an API key without an id.
    expect(actorOf(ids[2])).toEqual({ kind: 'api_key', id: '' });
    expect(events.text).not.toContain(DSYNC_KEY);
  });

  it('SCIM keeps its directory’s bearer secret: an admin credential is none', async () => {
    const made = await newDirectory(apiKey, 'scim-untouched');
    const dir = (made.body as { data: DirectoryRecord }).data;
    const { token } = await adminToken('gatehouse:admin');
    for (const credential of [ALL_KEY, DSYNC_KEY, token]) {
      const r = await scimClient(on, dir, credential)('GET', '/Users');
      expect(r.status).toBe(401);
    }
    expect((await scimClient(on, dir)('GET', '/Users')).status).toBe(200);
  });
});

describe('directory sync’s management API with admin authentication off (the default)', () => {
  it('takes the Api-Key only; a Bearer credential that is no Api-Key is refused as before', async () => {
    const list = await dsync(off, 'GET', '?tenant=a&product=b', apiKey);
    expect(list.status).toBe(200);
    const bearerOnly = await dsync(off, 'GET', '?tenant=a&product=b', bearer(ALL_KEY));
    expect(bearerOnly.status).toBe(401);
    expect(bearerOnly.body).toEqual({ error: { message: 'Unauthorized' } });
    expect(bearerOnly.headers.get('www-authenticate')).toBeNull();
    expect((await dsync(off, 'GET', '?tenant=a&product=b', {})).headers.get('www-authenticate')).toBeNull();
  });
});

describe('failed admin credentials on the management API go through the failed-authentication limiter', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({
      overrides: {
        'serve.admin.auth.enabled': true,
        'serve.admin.auth.api_keys': [`${hashAdminKey(DSYNC_KEY)}:dsync`],
        'dsync.api_keys': [API_KEY],
        'rate_limit.failed_auth.per_address': 3,
      },
      // Failures are counted in fixed windows of the server's clock: a clock that stands still keeps
      // the failures and the blocked attempt in one window (with the real clock, a minute's end
      // between them would start the count again).
      clock: manualClock(),
    });
  });
  afterAll(async () => limited?.close());

  it('answers 429 once an address failed too often with Bearer credentials; the Api-Key is never limited', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await dsync(limited, 'GET', '?tenant=a&product=b', bearer(`gha_wrong-${i}`))).status).toBe(401);
    }
    const blocked = await dsync(limited, 'GET', '?tenant=a&product=b', bearer(DSYNC_KEY));
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ error: { message: expect.stringContaining('Too many') } });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Jackson's Api-Key, under any scheme, is not counted nor blocked (as before).
    expect((await dsync(limited, 'GET', '?tenant=a&product=b', apiKey)).status).toBe(200);
    expect((await dsync(limited, 'GET', '?tenant=a&product=b', bearer(API_KEY))).status).toBe(200);
  });
});

interface ListedJob {
  id: number;
  task: string;
  queue: string | null;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  run_at: string;
  created_at: string;
  updated_at: string;
}

describe('the jobs API', () => {
  let deadId: number;
  const failed = (s: TestServer, query = '', headers: Record<string, string> = {}) =>
    send(`${s.adminUrl}/admin/jobs/failed${query}`, 'GET', undefined, headers);
  const retry = (s: TestServer, body: unknown, headers: Record<string, string> = {}) =>
    send(`${s.adminUrl}/admin/jobs/retry`, 'POST', body, headers);

  beforeAll(async () => {
    deadId = await withTx(on.container.db, (trx) =>
      enqueue(trx, 'test_flaky', { note: 'x' }, { maxAttempts: 2, queueName: 'families-test' }),
    );
    // Really failed: the worker ran it twice and it threw both times.
    await eventually(async () => {
      const r = await failed(on, '?task=test_flaky', bearer(JOBS_KEY));
      return (r.body as ListedJob[]).some((j) => j.id === deadId);
    }, 20_000);
  });

  it('lists a job that ran out of attempts, with its last error without secrets', async () => {
    const r = await failed(on, '?task=test_flaky', bearer(JOBS_KEY));
    expect(r.status).toBe(200);
    expect(r.headers.get('x-total-count')).toBe('1');
    const [job] = r.body as ListedJob[];
    expect(job).toMatchObject({
      id: deadId,
      task: 'test_flaky',
      queue: 'families-test',
      attempts: 2,
      max_attempts: 2,
      last_error: expect.stringContaining('receiver unavailable'),
    });
    for (const at of [job?.run_at, job?.created_at, job?.updated_at]) expect(Date.parse(at ?? '')).not.toBeNaN();
    expect(r.text).not.toContain(LEAKY);
    expect(r.text).not.toContain('leakedtokenvalue');
    // By queue too; another task or queue lists nothing.
    const byQueue = await failed(on, '?queue=families-test', bearer(JOBS_KEY));
    expect((byQueue.body as ListedJob[]).map((j) => j.id)).toEqual([deadId]);
    expect((await failed(on, '?task=test_other', bearer(JOBS_KEY))).body).toEqual([]);
    expect((await failed(on, '?task=test_flaky&queue=another', bearer(JOBS_KEY))).body).toEqual([]);
    // A token with gatehouse:admin:jobs reads it as well.
    const { token } = await adminToken('gatehouse:admin:jobs');
    expect((await failed(on, '?task=test_flaky&limit=1', bearer(token))).status).toBe(200);
  });

  it('refuses callers without the jobs family (403) and without a credential (401), in Hydra’s error shape', async () => {
    const { token } = await adminToken('gatehouse:admin:clients');
    for (const credential of [token, CLIENTS_KEY, DSYNC_KEY]) {
      const list = await failed(on, '', bearer(credential));
      expect(list.status).toBe(403);
      expect(list.body).toEqual({
        error: HERODOT.forbidden,
        error_description: expect.stringContaining('gatehouse:admin:jobs'),
      });
      expect(list.headers.get('www-authenticate')).toBe(
        `${CHALLENGE}, error="insufficient_scope", scope="gatehouse:admin:jobs"`,
      );
      expect((await retry(on, { all: true }, bearer(credential))).status).toBe(403);
    }
    const none = await failed(on);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ error: HERODOT.unauthorized });
    expect((await retry(on, { all: true })).status).toBe(401);
    // Under other spellings of its path, too.
    for (const path of ['/admin/jobs/failed/', '/admin//jobs/failed', '/jobs/failed', '/admin/jobs/%66ailed']) {
      expect((await send(`${on.adminUrl}${path}`, 'GET', undefined, bearer(CLIENTS_KEY))).status, path).toBe(403);
    }
    for (const path of ['/admin/JOBS/failed', '/admin/jobs%2Ffailed']) {
      expect((await send(`${on.adminUrl}${path}`, 'GET', undefined, bearer(CLIENTS_KEY))).status, path).toBe(404);
    }
    // Nothing was retried by the refused calls.
    expect(((await failed(on, '?task=test_flaky', bearer(JOBS_KEY))).body as ListedJob[])[0]?.id).toBe(deadId);
  });

  it('answers a bad query or body with 400 and a clear error, never a 500', async () => {
    for (const query of [
      '?limit=0',
      '?limit=1001',
      '?limit=abc',
      '?limit=-1',
      '?task=a&task=b',
      '?task=',
      '?task=with%20space',
      '?queue=%00',
      `?task=${'x'.repeat(201)}`,
    ]) {
      const r = await failed(on, query, bearer(JOBS_KEY));
      expect(r.status, query).toBe(400);
      expect(r.body, query).toEqual({ error: HERODOT.badRequest, error_description: expect.stringMatching(/'\w+'/) });
    }
    const bodies: Array<[unknown, RegExp]> = [
      [{}, /exactly one of/],
      [{ task: 'test_flaky', all: true }, /exactly one of .* It names task, all/],
      [{ task: 'test_flaky', ids: [1] }, /It names task, ids/],
      [{ all: false }, /`all` must be `true`/],
      [{ ids: [] }, /`ids` must be an array/],
      [{ ids: ['1'] }, /`ids` must be an array/],
      [{ ids: [1.5] }, /`ids` must be an array/],
      [{ ids: [-1] }, /`ids` must be an array/],
      [{ ids: [1e300] }, /`ids` must be an array/],
      [{ ids: 7 }, /`ids` must be an array/],
      [{ ids: Array.from({ length: 1001 }, (_, i) => i + 1) }, /`ids` must be an array/],
      [{ task: '' }, /`task` must be a task identifier/],
      [{ task: 5 }, /`task` must be a task identifier/],
      [{ queue: 'a b' }, /`queue` must be a queue name/],
      [{ task: 'test_flaky', extra: 1 }, /Unknown field\(s\): extra/],
      [[], /not a JSON object/],
      [[{ all: true }], /not a JSON object/],
      ['{"all": true', /not valid JSON/],
      ['"all"', /./],
      ['null', /./],
      ['7', /./],
    ];
    for (const [body, message] of bodies) {
      const r = await retry(on, body, bearer(JOBS_KEY));
      const where = JSON.stringify(body).slice(0, 60);
      expect(r.status, where).toBe(400);
      expect(r.body, where).toEqual({ error: HERODOT.badRequest, error_description: expect.stringMatching(message) });
    }
    // A body of another type is 415; none of these retried anything.
    const form = await send(`${on.adminUrl}/admin/jobs/retry`, 'POST', 'all=true', {
      ...bearer(JOBS_KEY),
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    expect(((await failed(on, '?task=test_flaky', bearer(JOBS_KEY))).body as ListedJob[])[0]?.id).toBe(deadId);
  });

  it('re-enqueues a failed job: it runs again with a fresh attempt budget, and a second retry finds none', async () => {
    expect((await retry(on, { ids: [deadId + 1_000_000] }, bearer(JOBS_KEY))).body).toEqual({ count: 0, ids: [] });
    flaky.failing = false;
    const r = await retry(on, { ids: [deadId, deadId] }, bearer(JOBS_KEY));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ count: 1, ids: [deadId] });
    await eventually(async () => flaky.ran === 1, 15_000);
    await eventually(
      async () => ((await failed(on, '?task=test_flaky', bearer(JOBS_KEY))).body as ListedJob[]).length === 0,
    );
    expect((await retry(on, { task: 'test_flaky' }, bearer(JOBS_KEY))).body).toEqual({ count: 0, ids: [] });
    expect((await retry(on, { queue: 'families-test' }, bearer(JOBS_KEY))).body).toEqual({ count: 0, ids: [] });
    expect((await retry(on, { all: true }, bearer(ALL_KEY))).status).toBe(200);
  });

  it('is open on the admin listener while admin authentication is off, as Hydra’s admin API is', async () => {
    const list = await failed(off);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
    expect(list.headers.get('x-total-count')).toBe('0');
    const r = await retry(off, { all: true });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ count: 0, ids: [] });
    expect((await retry(off, { all: 'yes' })).status).toBe(400);
    // And in the admin OpenAPI document.
    const doc = (await send(`${off.adminUrl}/admin/openapi.json`, 'GET')).body as { paths: Record<string, object> };
    expect(Object.keys(doc.paths['/admin/jobs/failed'] ?? {})).toEqual(['get']);
    expect(Object.keys(doc.paths['/admin/jobs/retry'] ?? {})).toEqual(['post']);
  });
});
