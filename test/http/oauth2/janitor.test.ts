/**
 * The janitor: `gatehouse janitor` (targets, limit, batch size, keep-if-younger) and the
 * `oauth2_janitor` task that goes on in follow-up jobs. Rows are seeded with SQL; only expired
 * rows may go.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseCrontab } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue } from '../../../src/core/jobs/enqueue.ts';
import { DEFAULT_NETWORK_ID as NID } from '../../../src/oauth2/tables.ts';
import { eventually, LogCapture, startTestServer, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';

let t: TestServer;
const logs = new LogCapture();

beforeAll(async () => {
  t = await startTestServer({
    log: logs.logger('info'),
    overrides: { 'log.level': 'info', 'janitor.limit': 2, 'janitor.batch_size': 1 },
  });
});
afterAll(() => t?.close());

type Row = { key: string; expires: string | null; made?: string };
const past = "now() - interval '1 hour'";
const future = "now() + interval '1 hour'";

/** Seeds rows into every table the janitor cleans; `key`s start with the prefix. */
async function seed(prefix: string) {
  const db = t.container.db;
  const rows = {
    oauth2_access_tokens: [
      { key: 'at-expired-1', expires: past },
      { key: 'at-expired-2', expires: past },
      { key: 'at-expired-3', expires: past },
      { key: 'at-live', expires: future },
      // Expired a minute ago, made ten minutes ago: kept with --keep-if-younger 1h.
      { key: 'at-young', expires: "now() - interval '1 minute'", made: "now() - interval '10 minutes'" },
    ],
    oauth2_refresh_tokens: [
      { key: 'rt-expired', expires: past },
      { key: 'rt-live', expires: future },
      { key: 'rt-forever', expires: null },
    ],
    oauth2_authorization_codes: [
      { key: 'ac-expired', expires: past },
      { key: 'ac-live', expires: future },
    ],
    oauth2_flows: [
      { key: 'flow-expired', expires: past },
      { key: 'flow-live', expires: future },
      { key: 'flow-forever', expires: null },
    ],
    oauth2_used_consents: [
      { key: 'used-expired', expires: past },
      { key: 'used-live', expires: future },
    ],
    oauth2_login_sessions: [
      { key: 'ls-expired', expires: past },
      { key: 'ls-live', expires: future },
    ],
    oauth2_jti_blacklist: [
      { key: 'jti-expired-1', expires: past },
      { key: 'jti-expired-2', expires: past },
      { key: 'jti-live', expires: future },
    ],
  } satisfies Record<string, Row[]>;
  const made = (r: Row) => sql.raw(r.made ?? "now() - interval '2 hours'");
  const exp = (r: Row) => sql.raw(r.expires ?? 'null');
  for (const [table, list] of Object.entries(rows)) {
    for (const r of list as Row[]) {
      const key = `${prefix}${r.key}`;
      if (table.endsWith('_tokens') || table === 'oauth2_authorization_codes') {
        await sql`insert into ${sql.table(table)} (nid, signature, request_id, client_id, subject, requested_at, expires_at, session_data)
          values (${NID}, ${key}, 'req', 'client', 'sub', ${made(r)}, ${exp(r)}, '')`.execute(db);
      } else if (table === 'oauth2_flows') {
        await sql`insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject, login_session_id,
            request_url, requested_at, handled_at, expires_at, session_data)
          values (${NID}, ${key}, ${key}, 'client', 'sub', 'sid', 'http://x/', ${made(r)}, ${made(r)}, ${exp(r)}, '')`.execute(
          db,
        );
      } else if (table === 'oauth2_used_consents') {
        await sql`insert into oauth2_used_consents (nid, consent_request_id, expires_at) values (${NID}, ${key}, ${exp(r)})`.execute(
          db,
        );
      } else if (table === 'oauth2_login_sessions') {
        await sql`insert into oauth2_login_sessions (nid, id, subject, authenticated_at, remember, expires_at)
          values (${NID}, ${key}, 'sub', ${made(r)}, true, ${exp(r)})`.execute(db);
      } else {
        await sql`insert into oauth2_jti_blacklist (nid, signature, expires_at) values (${NID}, ${key}, ${exp(r)})`.execute(
          db,
        );
      }
    }
  }
}

const KEYS: Record<string, string> = {
  oauth2_access_tokens: 'signature',
  oauth2_refresh_tokens: 'signature',
  oauth2_authorization_codes: 'signature',
  oauth2_flows: 'consent_request_id',
  oauth2_used_consents: 'consent_request_id',
  oauth2_login_sessions: 'id',
  oauth2_jti_blacklist: 'signature',
};

/** The seeded keys still present, per table, without the prefix. */
async function remaining(prefix: string): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [table, key] of Object.entries(KEYS)) {
    const { rows } = await sql<{ k: string }>`select ${sql.ref(key)} as k from ${sql.table(table)}
      where ${sql.ref(key)} like ${`${prefix}%`} order by 1`.execute(t.container.db);
    out[table] = rows.map((r) => r.k.slice(prefix.length));
  }
  return out;
}

const cli = (args: string[]) => runCli(['janitor', ...args], { DSN: t.database.url, SECRETS_SYSTEM: TEST_SECRET });

describe('gatehouse janitor', () => {
  it('removes only expired rows, target by target, in batches of --batch-size rows per transaction', async () => {
    await seed('a-');
    await sql`create table test_janitor_tx (xid bigint not null)`.execute(t.container.db);
    await sql`create function test_janitor_audit() returns trigger language plpgsql as $$
      begin insert into test_janitor_tx values (txid_current()); return old; end $$`.execute(t.container.db);
    await sql`create trigger test_janitor_audit after delete on oauth2_access_tokens
      for each row execute function test_janitor_audit()`.execute(t.container.db);

    const tokens = await cli(['--tokens', '--batch-size', '2', '--limit', '100', '--keep-if-younger', '1h', '--json']);
    expect(tokens.stderr).toBe('');
    expect(tokens.code).toBe(0);
    const result = JSON.parse(tokens.stdout);
    expect(result.deleted).toMatchObject({
      oauth2_authorization_codes: 1,
      oauth2_access_tokens: 3,
      oauth2_refresh_tokens: 1,
    });
    expect(Object.keys(result.deleted)).toHaveLength(3);
    const perTx = await sql<{ n: number }>`select count(*)::int as n from test_janitor_tx group by xid`.execute(
      t.container.db,
    );
    expect(perTx.rows.map((r) => r.n).sort()).toEqual([1, 2]);

    let left = await remaining('a-');
    expect(left.oauth2_access_tokens).toEqual(['at-live', 'at-young']);
    expect(left.oauth2_refresh_tokens).toEqual(['rt-forever', 'rt-live']);
    expect(left.oauth2_authorization_codes).toEqual(['ac-live']);
    expect(left.oauth2_jti_blacklist).toHaveLength(3); // other targets untouched

    const all = await cli([]);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('oauth2_access_tokens: 1 deleted');
    expect(all.stdout).toContain('oauth2_jti_blacklist: 2 deleted');
    left = await remaining('a-');
    expect(left).toEqual({
      oauth2_access_tokens: ['at-live'],
      oauth2_refresh_tokens: ['rt-forever', 'rt-live'],
      oauth2_authorization_codes: ['ac-live'],
      oauth2_flows: ['flow-forever', 'flow-live'],
      oauth2_used_consents: ['used-live'],
      oauth2_login_sessions: ['ls-live'],
      oauth2_jti_blacklist: ['jti-live'],
    });
  });

  it('deletes at most --limit rows per table and says when more remain', async () => {
    await seed('b-');
    const r = await cli(['--jtis', '--limit', '1', '--batch-size', '1']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('oauth2_jti_blacklist: 1 deleted');
    expect(r.stdout).toContain('limit reached for oauth2_jti_blacklist');
    expect((await remaining('b-')).oauth2_jti_blacklist).toHaveLength(2);
  });

  it('Hydra’s --access-lifespan / --refresh-lifespan delete tokens issued longer ago, whatever their expiry; plain progress lines off a terminal', async () => {
    await seed('l-');
    // Made two hours ago (at-young ten minutes ago), at-live and rt-live expire in the future.
    const r = await cli([
      '--tokens',
      '--access-lifespan',
      '30m',
      '--refresh-lifespan',
      '1h',
      '--consent-request-lifespan',
      '10m',
    ]);
    expect(r.code).toBe(0);
    const left = await remaining('l-');
    expect(left.oauth2_access_tokens).toEqual(['at-young']);
    expect(left.oauth2_refresh_tokens).toEqual([]);
    expect(left.oauth2_authorization_codes).toEqual(['ac-live']); // no lifespan flag for codes: stored expiry
    expect(r.stderr).toMatch(/^janitor: oauth2_access_tokens: \d+ deleted \(\d+\/\d+ rows, \d+ rows\/s\)$/m);
    expect(r.stderr).toMatch(/^janitor: oauth2_refresh_tokens: \d+ deleted/m);
    const bad = await cli(['--access-lifespan', 'forever']);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      1,
      'error: janitor: --access-lifespan must be a duration like 1h or 30m',
    ]);
  });

  it('--grants removes trusted JWT-bearer issuers past their expires_at and keeps live ones', async () => {
    const db = t.container.db;
    await sql`insert into jwk_keys (nid, sid, kid, keydata, created_at)
      values (${NID}, 'https://janitor.example', 'k1', 'sealed', now())`.execute(db);
    for (const [id, expires] of [
      ['00000000-0000-4000-8000-0000000000e1', past],
      ['00000000-0000-4000-8000-0000000000e2', future],
    ] as const) {
      await sql`insert into oauth2_trusted_jwt_bearer_issuers
          (id, nid, issuer, subject, key_set, key_id, created_at, expires_at)
        values (${id}, ${NID}, 'https://janitor.example', ${id}, 'https://janitor.example', 'k1',
          now() - interval '2 hours', ${sql.raw(expires)})`.execute(db);
    }
    const r = await cli(['--grants', '--json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout).deleted).toEqual({ oauth2_trusted_jwt_bearer_issuers: 1 });
    const { rows } = await sql<{ id: string }>`select id from oauth2_trusted_jwt_bearer_issuers
      where issuer = 'https://janitor.example'`.execute(db);
    expect(rows.map((x) => x.id)).toEqual(['00000000-0000-4000-8000-0000000000e2']);
  });

  it('refuses a batch size above the limit and bad numbers, with one line', async () => {
    for (const args of [
      ['--limit', '5', '--batch-size', '10'],
      ['--limit', '0'],
      ['--keep-if-younger', 'soon'],
    ]) {
      const r = await cli(args);
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^error: janitor: /);
    }
  });
});

describe('the oauth2_janitor task', () => {
  it('is scheduled daily in the crontab', () => {
    const items = parseCrontab(readFileSync(resolve(import.meta.dirname, '../../../crontab'), 'utf8'));
    const item = items.find((i) => i.task === 'oauth2_janitor');
    expect(item?.identifier).toBe('oauth2_janitor');
    expect(item?.options.maxAttempts).toBe(3);
  });

  it('cleans in bounded runs and enqueues itself while rows remain, logging the counts', async () => {
    await seed('c-');
    await sql`insert into oauth2_jti_blacklist (nid, signature, expires_at)
      select ${NID}, 'c-bulk-' || g, now() - interval '1 day' from generate_series(1, 7) g`.execute(t.container.db);
    await enqueue(t.container.db, 'oauth2_janitor', { targets: ['jtis'] }, { maxAttempts: 1 });
    const runner = await t.startWorker();
    try {
      await eventually(async () => {
        const left = await remaining('c-');
        return left.oauth2_jti_blacklist?.length === 1 && !(await pendingJanitorJobs());
      }, 20_000);
    } finally {
      await runner.stop();
    }
    expect((await remaining('c-')).oauth2_jti_blacklist).toEqual(['jti-live']);
    // janitor.limit is 2: at least five runs for the nine expired rows (and earlier tests' leftovers).
    const runs = logs
      .entries()
      .filter((e) => e.msg === 'janitor: expired rows deleted' && e.table === 'oauth2_jti_blacklist');
    expect(runs.length).toBeGreaterThanOrEqual(5);
    expect(runs.every((e) => (e.deleted as number) <= 2)).toBe(true);
    expect(logs.entries().some((e) => e.msg === 'janitor: rows remain; continuing in a new job')).toBe(true);
    // Other targets were not part of this run.
    expect((await remaining('c-')).oauth2_access_tokens).toContain('at-expired-1');
  });
});

async function pendingJanitorJobs(): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs
    where task_identifier = 'oauth2_janitor'`.execute(t.container.db);
  return rows[0]?.n ?? 0;
}
