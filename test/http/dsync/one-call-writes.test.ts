/**
 * Every SCIM write is planned once (src/dsync/change/plan.ts) and applied by one `apply`
 * (src/dsync/change/apply.ts): on PostgreSQL as one call of gatehouse_dsync_apply
 * (sql/0270_dsync_apply.sql), on CockroachDB statement by statement in a transaction. The
 * statement-by-statement form runs here on PostgreSQL through a CockroachDB-tagged handle (a SCIM
 * service of its own on the same database). Both get the same requests: the answers, the stored
 * rows and the stored events (key order included) must be the same; and the call must be exactly
 * one statement per write.
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type DatabaseHandle } from '../../../src/core/db/client.ts';
import { isAppError } from '../../../src/core/errors.ts';
import { createApplier } from '../../../src/dsync/change/apply.ts';
import { scimErrorBody } from '../../../src/dsync/errors.ts';
import { createScimService } from '../../../src/dsync/scim/service.ts';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, memberIds, scimClient, startDsyncServer, storedEvents } from '../../helpers/dsync.ts';

let oneCall: TestServer;
let tagged: DatabaseHandle;

beforeAll(async () => {
  oneCall = await startDsyncServer();
  tagged = createDatabase(oneCall.database.url, { max: 3, engine: 'cockroach' });
});
afterAll(async () => {
  await tagged?.destroy();
  await oneCall?.close();
});

type Ask = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

/** SCIM requests to the directory through the statement-by-statement form (a CockroachDB-tagged handle). */
function statementPath(d: DirectoryRecord): Ask {
  const services = oneCall.container.dsync.services;
  const scim = createScimService({
    db: tagged.db,
    directories: services.directories,
    delivery: services.policy,
    applier: createApplier(tagged.db, oneCall.container.audit),
  });
  return async (method, path, body) => {
    const [, resourceType, resourceId] = path.split('/');
    try {
      const r = await scim.handle({
        method,
        body,
        directoryId: d.id,
        resourceType: resourceType as string,
        resourceId,
        apiSecret: d.scim.secret,
      });
      return { status: r.status, body: JSON.parse(JSON.stringify(r.data ?? {})) };
    } catch (e) {
      if (!isAppError(e)) throw e;
      return { status: e.status, body: scimErrorBody(e) };
    }
  };
}

/** The statements the process sends while `fn` runs (text, whitespace collapsed). */
async function sent<T>(fn: () => Promise<T>): Promise<{ value: T; texts: string[] }> {
  const texts: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string } | undefined;
    texts.push((typeof q === 'string' ? q : (q?.text ?? '?')).replace(/\s+/g, ' ').trim());
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    return { value: await fn(), texts };
  } finally {
    pg.Client.prototype.query = query;
  }
}

/** Runs the same SCIM script on a server: every answer and the directory's events, ids made comparable. */
async function script(s: TestServer, through?: (d: DirectoryRecord) => Ask) {
  const d = await createDirectory(s, {
    tenant: 'one-call',
    product: 'p',
    webhook_url: 'https://hooks.example/one-call',
    webhook_secret: 'whsec-one-call',
  });
  const scim: Ask = through ? through(d) : scimClient(s, d);
  const answers: unknown[] = [];
  const ask = async (method: string, path: string, body?: unknown) => {
    const r = await scim(method, path, body);
    answers.push({ method, path, status: r.status, body: r.body });
    return r;
  };
  // A group that names a member before the user exists (pending membership), and one more.
  const g = (await ask('POST', '/Groups', { displayName: 'Early', members: [{ value: 'u-1' }] })).body;
  const g2 = (await ask('POST', '/Groups', { displayName: 'Second', members: [{ value: 'u-1' }] })).body;
  const gid = String(g.id);
  const user = (id: string, extra: Record<string, unknown> = {}) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userId: id,
    userName: `${id}@example.com`,
    name: { givenName: 'Given', familyName: id },
    emails: [{ primary: true, value: `${id}@example.com`, type: 'work' }],
    active: true,
    ...extra,
  });
  await ask('POST', '/Users', user('u-1', { roles: ['admin', 'dev'] })); // resolves both pending memberships
  await ask('POST', '/Users', user('u-2'));
  await ask('POST', '/Users', { userName: 'no-email-user', userId: 'u-3', active: 'False' });
  await ask('POST', '/Users', user('u-9', { userName: 'U-2@EXAMPLE.COM' })); // taken userName (case-insensitive)
  await ask('POST', '/Users', user('u-2', { userName: 'other@example.com', emails: [] })); // taken id
  await ask('POST', '/Users', { name: { givenName: 'x' } }); // 400: no userName
  await ask('POST', '/Users', { userName: 'lone-\ud800@example.com' }); // a value PostgreSQL refuses
  await ask('PATCH', `/Groups/${gid}`, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [
      { op: 'add', path: 'members', value: [{ value: 'u-2' }, { value: 'ghost' }, { value: 'u-1' }, { value: 'u-2' }] },
      { op: 'Remove', path: 'members[value eq "u-1" or value eq "nobody"]' },
    ],
  });
  await ask('PATCH', `/Groups/${gid}`, {
    Operations: [{ op: 'remove', path: 'members', value: [{ value: 'ghost' }, { value: 'u-2' }, { value: 'u-3' }] }],
  });
  await ask('PATCH', `/Groups/${gid}`, { Operations: [{ op: 'add', path: 'members', value: [{ value: 'u-3' }] }] });
  await ask('PATCH', '/Groups/no-such-group', {
    Operations: [{ op: 'add', path: 'members', value: [{ value: 'u-2' }] }],
  });
  await ask('PATCH', '/Groups/no-such-group', { Operations: [{ op: 'add', path: 'members', value: [{ nope: 1 }] }] });
  await ask('PATCH', `/Groups/${gid}`, { Operations: [{ op: 'add', path: 'members', value: [{ nope: 1 }] }] });
  const events = await storedEvents(s, d.id);
  const members = await memberIds(s, d.id, gid);
  const users = await sql<{ id: string; user_name: string; email: string | null; roles: unknown; raw: unknown }>`
    select id, user_name, email, active, first_name, last_name, external_id, roles, raw::text as raw
    from dsync_users where directory_id = ${d.id} order by id`.execute(s.container.db);
  // Ids that differ between the servers by nature: the directory's, the groups' and the events'.
  const text = JSON.stringify({ answers, events, members, users: users.rows })
    .replaceAll(d.id, '<directory>')
    .replaceAll(gid, '<group>')
    .replaceAll(String(g2.id), '<group2>');
  return { text, events, directory: d, scim, gid };
}

describe('one-call SCIM writes', () => {
  it('answer, store and emit exactly what the statement path does, key order included', async () => {
    const a = await script(oneCall);
    const b = await script(oneCall, statementPath);
    expect(a.text).toBe(b.text);
    // The script did exercise the interesting cases.
    expect(a.events.map((e) => e.event)).toEqual([
      'group.created',
      'group.user_added',
      'group.created',
      'group.user_added',
      'user.created',
      'group.user_added',
      'group.user_added',
      'user.created',
      'user.created',
      'group.user_added',
      'group.user_added',
      'group.user_removed',
      'group.user_removed',
      'group.user_added',
    ]);
    const resolved = a.events[5] as { data: Record<string, unknown> };
    expect(Object.keys(resolved.data)).toEqual([
      'id',
      'first_name',
      'last_name',
      'email',
      'active',
      'roles',
      'raw',
      'group',
    ]);
    const ghost = a.events[10] as { data: Record<string, unknown> };
    expect(ghost.data).toMatchObject({ id: 'ghost' });
    expect(Object.keys(ghost.data)).toEqual(['id', 'group']);
  });

  it('sends one statement per create and per members PATCH (the statement path sends several)', async () => {
    const count = async (through?: (d: DirectoryRecord) => Ask) => {
      const d = await createDirectory(oneCall, { tenant: 'count', product: 'p' });
      const scim: Ask = through ? through(d) : scimClient(oneCall, d);
      const g = (await scim('POST', '/Groups', { displayName: 'Counted' })).body;
      const create = await sent(() => scim('POST', '/Users', { userName: 'counted@example.com' }));
      expect(create.value.status).toBe(201);
      const value = [{ value: String(create.value.body.id) }];
      // The first PATCH of a group reads the group and the users it names (the process keeps them).
      expect(
        (await scim('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'add', path: 'members', value }] })).status,
      ).toBe(200);
      const patch = await sent(() =>
        scim('PATCH', `/Groups/${g.id}`, { Operations: [{ op: 'remove', path: 'members', value }] }),
      );
      expect(patch.value.status).toBe(200);
      // Statements of the write itself (the change feed and the pool's own checks are not); the name
      // locks are advisory locks on PostgreSQL, rows of gatehouse_locks on CockroachDB.
      const mine = (texts: string[]) =>
        texts.filter((t) => /dsync|^begin|^commit|advisory|gatehouse_locks|audit/i.test(t));
      return { create: mine(create.texts), patch: mine(patch.texts) };
    };
    const one = await count();
    expect(one.create).toHaveLength(1);
    expect(one.create[0]).toMatch(/^select gatehouse_dsync_apply\(/);
    expect(one.patch).toHaveLength(1);
    expect(one.patch[0]).toMatch(/^select gatehouse_dsync_apply\(/);
    const many = await count(statementPath);
    expect(many.create.length).toBeGreaterThan(5);
    expect(many.patch.length).toBeGreaterThan(5);
  });

  it('answers a create or PATCH in a directory deactivated meanwhile as the statement path: 200 {}, nothing kept', async () => {
    const d = await createDirectory(oneCall, { tenant: 'gone', product: 'p' });
    const scim = scimClient(oneCall, d);
    const g = (await scim('POST', '/Groups', { displayName: 'Gone' })).body;
    await scim('POST', '/Users', { userName: 'early@example.com' }); // the directory is now cached
    const before = (await storedEvents(oneCall, d.id)).length;
    // Deactivated without the change notification (triggers off for this transaction), so the
    // process still holds the directory as active: the function's events statement finds it out.
    await oneCall.container.db.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await sql`update dsync_directories set deactivated = true where id = ${d.id}`.execute(trx);
    });
    const r = await sent(() => scim('POST', '/Users', { userName: 'late@example.com' }));
    expect(r.texts.some((t) => t.startsWith('select gatehouse_dsync_apply('))).toBe(true);
    expect([r.value.status, r.value.body]).toEqual([200, {}]);
    const p = await scim('PATCH', `/Groups/${g.id}`, {
      Operations: [{ op: 'add', path: 'members', value: [{ value: 'x' }] }],
    });
    expect([p.status, p.body]).toEqual([200, {}]);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_users
      where directory_id = ${d.id}`.execute(oneCall.container.db);
    expect(rows[0]?.n).toBe(1);
    expect(await memberIds(oneCall, d.id, String(g.id))).toEqual([]);
    expect(await storedEvents(oneCall, d.id)).toHaveLength(before);
  });

  it('sends creates of one directory that arrive together in shared calls, each with its own answer', async () => {
    const d = await createDirectory(oneCall, {
      tenant: 'together',
      product: 'p',
      webhook_url: 'https://hooks.example/together',
      webhook_secret: 'whsec-together',
    });
    const scim = scimClient(oneCall, d);
    // 10 names, each asked for three times at once: one 201 and two 409 per name.
    const names = Array.from({ length: 30 }, (_, i) => `t-${i % 10}@example.com`);
    // "At once" made certain whatever the machine's speed: the directory row is held, so the first
    // two calls wait at their events and every other create queues behind them; then it is let go.
    const applier = oneCall.container.dsync.services.applier;
    const holder = new pg.Client({ connectionString: oneCall.database.url });
    await holder.connect();
    await holder.query('begin');
    await holder.query('select 1 from dsync_directories where id = $1 for update', [d.id]);
    const { value: answers, texts } = await sent(async () => {
      const all = Promise.all(names.map((userName) => scim('POST', '/Users', { userName })));
      try {
        await eventually(async () => applier.waiting(d.id) === names.length - 2);
      } finally {
        await holder.query('rollback');
        await holder.end();
      }
      return all;
    });
    expect(answers.filter((a) => a.status === 201)).toHaveLength(10);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(20);
    for (const a of answers.filter((x) => x.status === 409))
      expect(a.body).toMatchObject({ detail: 'User already exists', scimType: 'uniqueness' });
    const calls = texts.filter((t) => t.startsWith('select gatehouse_dsync_apply(')).length;
    expect(calls).toBeLessThan(names.length);
    const events = await storedEvents(oneCall, d.id);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    const created = answers.filter((a) => a.status === 201).map((a) => String(a.body.id));
    expect(events.map((e) => String((e.data as { id: string }).id)).sort()).toEqual(created.sort());
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from dsync_webhook_outbox
      where directory_id = ${d.id}`.execute(oneCall.container.db);
    expect(rows[0]?.n).toBe(10);
  });

  it('answers a create that fails its shared call alone, and the others of that call as usual', async () => {
    const d = await createDirectory(oneCall, { tenant: 'one-bad', product: 'p' });
    const scim = scimClient(oneCall, d);
    const bodies = Array.from({ length: 12 }, (_, i) => ({
      userName: i === 7 ? `bad-\ud800-${i}@example.com` : `ok-${i}@example.com`,
    }));
    const answers = await Promise.all(bodies.map((b) => scim('POST', '/Users', b)));
    expect(answers.map((a) => a.status)).toEqual(bodies.map((_, i) => (i === 7 ? 400 : 201)));
    expect(await storedEvents(oneCall, d.id)).toHaveLength(11);
  });
});
