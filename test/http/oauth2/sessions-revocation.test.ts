/**
 * `DELETE /admin/oauth2/auth/sessions/login?subject=`: 20 000 sessions deleted in bounded batches
 * (proven with an audit trigger recording the transaction id of every deleted row), the
 * back-channel jobs enqueued in the transaction of their batch, cancellation midway and a repeat;
 * `gatehouse revoke login-sessions` killed (SIGKILL) inside a batch: whole batches only, and a re-run
 * completes in ceil(N / batch size) transactions in all, every notification enqueued exactly once.
 */
import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_NETWORK_ID as NID } from '../../../src/oauth2/tables.ts';
import { eventually, LogCapture, startTestServer, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { CLI, runCli } from '../../helpers/cli.ts';
import { backchannelJobs, sessionCount } from '../../helpers/logout.ts';
import { createClient } from '../../helpers/oauth2.ts';

const BATCH = 100;
let t: TestServer;
const logs = new LogCapture();

beforeAll(async () => {
  t = await startTestServer({
    log: logs.logger('info'),
    overrides: { 'oauth2.session_revocation.batch_size': BATCH, 'log.level': 'info' },
  });
  // Test-only audit: the transaction of every deleted session and of every enqueued job.
  await sql`create table test_deleted_sessions (xid bigint not null, id text not null, subject text not null)`.execute(
    t.container.db,
  );
  await sql`create function test_audit_session() returns trigger language plpgsql as $$
    begin insert into test_deleted_sessions values (txid_current(), old.id, old.subject); return old; end $$`.execute(
    t.container.db,
  );
  await sql`create trigger test_audit_session after delete on oauth2_login_sessions
    for each row execute function test_audit_session()`.execute(t.container.db);
  await sql`create table test_enqueued (xid bigint not null, sid text)`.execute(t.container.db);
  await sql`create function test_audit_job() returns trigger language plpgsql as $$
    begin insert into test_enqueued values (txid_current(), new.payload->>'sid'); return new; end $$`.execute(
    t.container.db,
  );
  await sql`create trigger test_audit_job after insert on graphile_worker._private_jobs
    for each row execute function test_audit_job()`.execute(t.container.db);
});
afterAll(() => t?.close());

async function seedSessions(subject: string, n: number) {
  await sql`insert into oauth2_login_sessions (nid, id, subject, authenticated_at, remember, expires_at)
    select ${NID}, ${subject} || '-sid-' || g, ${subject}, now(), true, now() + interval '1 day'
    from generate_series(1, ${n}) g`.execute(t.container.db);
}

const revoke = (q: string, init: RequestInit = {}) =>
  fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/login?${q}`, { method: 'DELETE', ...init });

describe('login session revocation', () => {
  it('needs subject or sid (400 invalid_request)', async () => {
    const r = await revoke('');
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({
      error: 'invalid_request',
      error_description: expect.stringContaining("Either 'subject' or 'sid' query parameters need to be defined."),
    });
  });

  it('deletes 20 000 sessions of one subject in batches of at most batch_size rows per transaction, notifying per batch', async () => {
    await seedSessions('bulk', 20_000);
    await seedSessions('bystander', 50);
    // 30 of the sessions had a consent flow with a client registered for back-channel logout.
    const client = await createClient(t, { backchannel_logout_uri: 'http://127.0.0.1:9/bc' });
    await sql`insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject, login_session_id,
        request_url, requested_at, handled_at, session_data)
      select ${NID}, 'bulk-consent-' || g, 'bulk-login-' || g, ${client.client_id}, 'bulk', 'bulk-sid-' || (g * 613),
        'http://x/', now(), now(), ''
      from generate_series(1, 30) g`.execute(t.container.db);

    const started = performance.now();
    const r = await revoke('subject=bulk');
    const ms = performance.now() - started;
    expect(r.status).toBe(204);
    expect(await sessionCount(t, { subject: 'bulk' })).toBe(0);
    expect(await sessionCount(t, { subject: 'bystander' })).toBe(50);

    const perTx = await sql<{ xid: string; n: number }>`select xid, count(*)::int as n from test_deleted_sessions
      where subject = 'bulk' group by xid`.execute(t.container.db);
    expect(perTx.rows.reduce((a, b) => a + b.n, 0)).toBe(20_000);
    expect(Math.max(...perTx.rows.map((x) => x.n))).toBeLessThanOrEqual(BATCH);
    expect(perTx.rows.length).toBe(20_000 / BATCH);

    // Every notification was enqueued by the transaction that deleted its session.
    const jobs = (await backchannelJobs(t)).filter((j) => j.sid.startsWith('bulk-sid-'));
    expect(jobs).toHaveLength(30);
    const mismatched = await sql<{ n: number }>`select count(*)::int as n from test_enqueued e
      left join test_deleted_sessions d on d.id = e.sid and d.xid = e.xid
      where e.sid like 'bulk-sid-%' and d.id is null`.execute(t.container.db);
    expect(mismatched.rows[0]?.n).toBe(0);
    expect(ms).toBeLessThan(60_000);
    const done = logs.entries().find((e) => e.msg === 'login sessions revoked' && e.deleted === 20_000);
    expect(done).toMatchObject({ batches: 200, notified: 30 });
  });

  it('stops when the caller disconnects midway (deleted sessions stay deleted) and a repeated call finishes', async () => {
    const n = 5_000;
    await seedSessions('cancel', n);
    // From the 4th batch on, deletions of this subject wait for an advisory lock the test holds.
    await sql`create function test_gate() returns trigger language plpgsql as $$
      begin
        if exists (select 1 from gone where subject = 'cancel')
           and (select count(distinct xid) from test_deleted_sessions where subject = 'cancel') >= 4 then
          perform pg_advisory_xact_lock_shared(4242);
        end if;
        return null;
      end $$`.execute(t.container.db);
    await sql`create trigger test_gate after delete on oauth2_login_sessions
      referencing old table as gone for each statement execute function test_gate()`.execute(t.container.db);
    const holder = new pg.Client({ connectionString: t.database.url });
    holder.on('error', () => {});
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(4242)');
      const committedBatches = async () =>
        (
          await sql<{
            n: number;
          }>`select count(distinct xid)::int as n from test_deleted_sessions where subject = 'cancel'`.execute(
            t.container.db,
          )
        ).rows[0]?.n ?? 0;

      const caller = new AbortController();
      const request = revoke('subject=cancel', { signal: caller.signal }).catch((e: Error) => e);
      // Three batches committed, the fourth waits inside its transaction.
      await eventually(async () => (await committedBatches()) === 3);
      await eventually(async () => {
        const { rows } = await holder.query(
          `select 1 from pg_stat_activity where wait_event_type = 'Lock' and wait_event = 'advisory' and datname = current_database()`,
        );
        return rows.length === 1;
      });
      caller.abort();
      expect(await request).toBeInstanceOf(Error);
      await eventually(async () => logs.lines.some((l) => l.includes('the client disconnected')));
      await holder.query('select pg_advisory_unlock(4242)');

      const stopped = await eventually(async () =>
        logs.entries().find((e) => String(e.msg).startsWith('login session revocation stopped')),
      );
      expect(stopped).toMatchObject({ deleted: 4 * BATCH, batches: 4 });
      expect(await committedBatches()).toBe(4);
      expect(await sessionCount(t, { subject: 'cancel' })).toBe(n - 4 * BATCH);
    } finally {
      await holder.end();
    }
    await sql`drop trigger test_gate on oauth2_login_sessions`.execute(t.container.db);

    const again = await revoke('subject=cancel');
    expect(again.status).toBe(204);
    expect(await sessionCount(t, { subject: 'cancel' })).toBe(0);
    const perTx = await sql<{ n: number }>`select max(c)::int as n from (select count(*) as c from test_deleted_sessions
      where subject = 'cancel' group by xid) x`.execute(t.container.db);
    expect(perTx.rows[0]?.n).toBeLessThanOrEqual(BATCH);
  });

  it('a process killed inside a batch leaves only whole batches; a re-run completes, ceil(N / batch) transactions in all', {
    timeout: 120_000,
  }, async () => {
    const n = 1_050;
    await seedSessions('killed', n);
    // Every 50th session had a consent flow with a back-channel client: 21 notifications in all.
    const client = await createClient(t, { backchannel_logout_uri: 'http://127.0.0.1:9/bc' });
    await sql`insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject, login_session_id,
        request_url, requested_at, handled_at, session_data)
      select ${NID}, 'killed-consent-' || g, 'killed-login-' || g, ${client.client_id}, 'killed', 'killed-sid-' || (g * 50),
        'http://x/', now(), now(), ''
      from generate_series(1, 21) g`.execute(t.container.db);
    const committedBatches = async () =>
      (
        await sql<{ n: number }>`select count(distinct xid)::int as n from test_deleted_sessions
          where subject = 'killed'`.execute(t.container.db)
      ).rows[0]?.n ?? 0;
    // The 4th batch waits, inside its transaction after its DELETE, for an advisory lock the test holds.
    await sql`create function test_gate_kill() returns trigger language plpgsql as $$
      begin
        if exists (select 1 from gone where subject = 'killed')
           and (select count(distinct xid) from test_deleted_sessions where subject = 'killed') >= 4 then
          perform pg_advisory_xact_lock_shared(4343);
        end if;
        return null;
      end $$`.execute(t.container.db);
    await sql`create trigger test_gate_kill after delete on oauth2_login_sessions
      referencing old table as gone for each statement execute function test_gate_kill()`.execute(t.container.db);
    const env = {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      SECRETS_SYSTEM: TEST_SECRET,
      OAUTH2_SESSION_REVOCATION_BATCH_SIZE: String(BATCH),
    };
    const holder = new pg.Client({ connectionString: t.database.url });
    holder.on('error', () => {});
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(4343)');
      const child = spawn(
        process.execPath,
        [CLI, 'revoke', 'login-sessions', '--subject', 'killed', '--no-progress', t.database.url],
        { env, stdio: 'ignore' },
      );
      const exited = new Promise((r) => child.on('exit', r));
      await eventually(async () => (await committedBatches()) === 3, 60_000);
      await eventually(async () => {
        const { rows } = await holder.query(
          `select 1 from pg_stat_activity where wait_event_type = 'Lock' and wait_event = 'advisory' and datname = current_database()`,
        );
        return rows.length === 1;
      });
      child.kill('SIGKILL');
      await exited;
      // The dead process's backend finishes its statement, finds no client and rolls the batch back.
      await holder.query('select pg_advisory_unlock(4343)');
      await eventually(async () => {
        const { rows } = await holder.query(
          `select 1 from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'
             or (wait_event_type = 'Lock' and wait_event = 'advisory' and datname = current_database())`,
        );
        return rows.length === 0;
      });
    } finally {
      await holder.end();
    }
    await sql`drop trigger test_gate_kill on oauth2_login_sessions`.execute(t.container.db);

    // Only the three committed batches happened: their sessions and their notifications, nothing of the 4th.
    expect(await committedBatches()).toBe(3);
    expect(await sessionCount(t, { subject: 'killed' })).toBe(n - 3 * BATCH);
    const jobsOfDeleted = async () =>
      sql<{ enqueued: number; expected: number; mismatched: number; duplicates: number }>`select
          (select count(*)::int from test_enqueued where sid like 'killed-sid-%') as enqueued,
          (select count(*)::int from oauth2_flows f join test_deleted_sessions d on d.id = f.login_session_id
            where f.subject = 'killed') as expected,
          (select count(*)::int from test_enqueued e left join test_deleted_sessions d on d.id = e.sid and d.xid = e.xid
            where e.sid like 'killed-sid-%' and d.id is null) as mismatched,
          (select count(*)::int from (select sid from test_enqueued where sid like 'killed-sid-%'
            group by sid having count(*) > 1) x) as duplicates`
        .execute(t.container.db)
        .then((r) => r.rows[0]);
    const partial = await jobsOfDeleted();
    expect(partial).toMatchObject({ mismatched: 0, duplicates: 0 });
    expect(partial?.enqueued).toBe(partial?.expected);

    // The re-run finishes the job: ceil(1050 / 100) = 11 transactions in all, 21 notifications, each once.
    const again = await runCli(
      ['revoke', 'login-sessions', '--subject', 'killed', t.database.url, '--json'],
      env,
      60_000,
    );
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({
      deleted: n - 3 * BATCH,
      notified: 21 - (partial?.enqueued ?? 0),
      complete: true,
    });
    expect(await sessionCount(t, { subject: 'killed' })).toBe(0);
    expect(await committedBatches()).toBe(Math.ceil(n / BATCH));
    const perTx = await sql<{ n: number }>`select max(c)::int as n from (select count(*) as c from test_deleted_sessions
      where subject = 'killed' group by xid) x`.execute(t.container.db);
    expect(perTx.rows[0]?.n).toBeLessThanOrEqual(BATCH);
    expect(await jobsOfDeleted()).toEqual({ enqueued: 21, expected: 21, mismatched: 0, duplicates: 0 });
  });

  it('answers 204 for a subject without sessions', async () => {
    expect((await revoke('subject=nobody')).status).toBe(204);
  });
});
