/**
 * An OAuth 2.0 database at realistic volume, loaded fast (the OAuth 2.0 counterpart of
 * dsync-volume.ts): a handful of rows through the API — one client, one whole authorization-code
 * flow, one directory — so that every value gatehouse seals or hashes is real, then everything else
 * cloned from those rows with set-based SQL (`INSERT … SELECT … generate_series`), then
 * `VACUUM (ANALYZE)` as autovacuum would long have done on a database of that age.
 *
 * VOLUME (SMOKE_VOLUME: a hundredth):
 * - 10,000 clients: copies of one client made through the admin API (every column copied but the
 *   id, the name and the timestamps), so each has the template's secret hash — a working
 *   `client_secret_basic` client, though the fixture never authenticates as one.
 * - 1,000,000 access tokens and 1,000,000 refresh tokens, pairs of one grant (`request_id`, the
 *   refresh token naming its access token), spread over the clients and 100,000 subjects, issued over
 *   the last 30 days. 60% of the access tokens (issued more than an hour ago, one hour lifetime)
 *   and 40% of the refresh tokens (issued more than 30 days ago, 30 days) are expired: 1,000,000
 *   rows for the janitor. Signatures are 43-character base64url strings, as an HMAC-SHA256 is, but
 *   of no token anybody holds: the rows add volume, and real token requests work beside them.
 *   `session_data` is the sealed session of the real flow's tokens, copied (its size is realistic;
 *   nothing ever opens a copy, since nobody can present its token).
 * - 1,000,000 login sessions (10 per subject, remembered for 30 days, 30% of them past it).
 * - 200,000 consent sessions (`oauth2_flows`, Hydra's flow table: one row per consumed consent
 *   verifier), remembered for 30 days, 20% expired, each naming one of the login sessions; the
 *   request URL, scopes, context and sealed session are the real flow's.
 * - History tables. Graphile-worker deletes a job once it succeeded, so "100,000 finished jobs"
 *   cannot exist in `graphile_worker`; and `gatehouse_job_outbox` is empty when the queue lives in
 *   the data database (rows exist only until the relay moves them to another queue database). What
 *   does accumulate is history: 100,000 delivered webhook log rows (`dsync_webhook_logs`, kept for
 *   `dsync.webhook_logs_ttl`, 7 days) on one directory, and 100,000 audit events (`audit_events`,
 *   append-only: logins accepted, consents granted, tokens issued).
 *
 * The scenario's own clients and tokens are made through the API afterwards, as the empty-database
 * scenarios make them (scenarios/volume.ts).
 */
import pg from 'pg';
import { DEFAULT_NETWORK_ID as NID } from '../../src/oauth2/tables.ts';
import { createDirectory } from './dsync-volume.ts';
import type { Proc } from './proc.ts';
import { codeClient, ghFlow } from './scenarios/flows.ts';

export interface OAuth2Volume {
  clients: number;
  /** Access tokens, and as many refresh tokens (one pair per grant). */
  tokens: number;
  subjects: number;
  loginSessions: number;
  consentSessions: number;
  /** Rows of each history table (webhook logs, audit events). */
  history: number;
}

export const OAUTH2_VOLUME: OAuth2Volume = {
  clients: 10_000,
  tokens: 1_000_000,
  subjects: 100_000,
  loginSessions: 1_000_000,
  consentSessions: 200_000,
  history: 100_000,
};

export const OAUTH2_SMOKE_VOLUME: OAuth2Volume = {
  clients: 100,
  tokens: 10_000,
  subjects: 1_000,
  loginSessions: 10_000,
  consentSessions: 2_000,
  history: 1_000,
};

export interface LoadedOAuth2Volume {
  /** Rows per table after the load. */
  rows: Record<string, number>;
  /** Expired access and refresh tokens loaded (the janitor's work). */
  expiredTokens: number;
  /** Seconds the load took (API rows, SQL, VACUUM ANALYZE). */
  seconds: number;
}

const TABLES = [
  'oauth2_clients',
  'oauth2_access_tokens',
  'oauth2_refresh_tokens',
  'oauth2_login_sessions',
  'oauth2_flows',
  'dsync_webhook_logs',
  'audit_events',
];

/** A 43-character base64url digest of `x` (the shape of an HMAC-SHA256 token signature). */
const sig = (x: string) => `rtrim(translate(encode(sha256(convert_to(${x}, 'UTF8')), 'base64'), '+/', '-_'), '=')`;
/** Fixture rows name clients `volume-client-<1..clients>` ($3) and subjects `volume-user-<1..subjects>` ($4). */
const CLIENT = `'volume-client-' || (1 + k % $3::int)`;
const SUBJECT = `'volume-user-' || (1 + (k::bigint * 7919) % $4::int)`;

/** The row a clone copies: `table`'s row (of the default network) whose `key` is `value`. */
interface Template {
  table: string;
  key: string;
  value: string;
}

/**
 * `insert into <table> select …` copying the template row `counts[2]` times (`k` = 1..n), the
 * columns in `set` computed instead of copied (`$3`: clients, `$4`: subjects). Every other column of
 * `table` is copied from the template, so a column added later is filled as the template has it.
 */
async function clone(
  c: pg.Client,
  table: string,
  from: Template,
  set: Record<string, string>,
  counts: [number, number, number],
): Promise<void> {
  const { rows } = await c.query<{ column_name: string }>(
    `select column_name from information_schema.columns
     where table_schema = current_schema() and table_name = $1 and is_generated = 'NEVER'
     order by ordinal_position`,
    [table],
  );
  const cols = rows.map((r) => r.column_name);
  const unknown = Object.keys(set).filter((k) => !cols.includes(k));
  if (unknown.length) throw new Error(`${table} has no column ${unknown.join(', ')}`);
  const exprs = cols.map((col) => (col in set ? `${set[col]}` : `t.${col}`));
  await c.query(
    `insert into ${table} (${cols.join(', ')})
     select ${exprs.join(', ')}
     from ${from.table} t, generate_series(1, $5::int) k
     where t.nid = $1 and t.${from.key} = $2
       and $3::int > 0 and $4::int > 0`,
    [NID, from.value, ...counts],
  );
}

/**
 * Runs `fill` in one transaction with the indexes of `table` dropped, then builds them again as
 * they were (same names and definitions; a primary key or unique constraint is put back on its
 * rebuilt index). Building an index over a million rows takes about a second; keeping five of them
 * up to date row by row, with keys as random as HMAC signatures, took minutes. The rebuilt B-trees
 * are packed (fill factor 90) where ones grown by random inserts are about 70% full: the fixture's
 * indexes are somewhat smaller than a real database's.
 */
async function withoutIndexes(c: pg.Client, table: string, fill: () => Promise<void>): Promise<void> {
  const { rows } = await c.query<{ name: string; def: string; con: string | null; kind: string | null }>(
    `select i.relname as name, pg_get_indexdef(x.indexrelid) as def, con.conname as con, con.contype::text as kind
     from pg_index x join pg_class i on i.oid = x.indexrelid
       left join pg_constraint con on con.conindid = x.indexrelid and con.conrelid = x.indrelid
     where x.indrelid = $1::regclass`,
    [table],
  );
  await c.query('begin');
  try {
    for (const r of rows)
      await c.query(r.con ? `alter table ${table} drop constraint ${r.con}` : `drop index ${r.name}`);
    await fill();
    for (const r of rows) {
      await c.query(r.def);
      if (r.con)
        await c.query(
          `alter table ${table} add constraint ${r.con} ${r.kind === 'p' ? 'primary key' : 'unique'} using index ${r.name}`,
        );
    }
    await c.query('commit');
  } catch (e) {
    await c.query('rollback');
    throw e;
  }
}

/**
 * Loads `v` into the database `p` serves from (see the top of this file), on two connections at
 * once (access tokens on one, refresh tokens on the other, and so on: each table in a transaction
 * of its own). Returns the row counts and the seconds it took.
 */
export async function loadOAuth2Volume(p: Proc, v: OAuth2Volume, apiKey: string): Promise<LoadedOAuth2Volume> {
  const started = performance.now();
  // The real rows: a client, a whole flow (a login session, a consent session, an access and a
  // refresh token with sealed sessions), and a directory for the webhook logs.
  const template = await codeClient(p, {
    client_name: 'volume template',
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    scope: 'openid offline read write',
  });
  await ghFlow(p, template);
  const dir = await createDirectory({ adminUrl: p.adminUrl, dsn: p.dsn, apiKey }, `volume-logs-${Date.now()}`);
  const [a, b] = [new pg.Client({ connectionString: p.dsn }), new pg.Client({ connectionString: p.dsn })] as const;
  await Promise.all([a.connect(), b.connect()]);
  try {
    for (const c of [a, b]) await c.query(`set synchronous_commit = off; set maintenance_work_mem = '256MB'`);
    const one = async (sql: string) => {
      const { rows } = await a.query<{ k: string }>(sql, [NID, template.client_id]);
      if (!rows[0]) throw new Error(`the template flow left no row: ${sql}`);
      return rows[0].k;
    };
    // Access tokens are cloned from the refresh token too (its columns are theirs and more): with
    // stateless JWT access tokens the flow stores none.
    const rt: Template = {
      table: 'oauth2_refresh_tokens',
      key: 'signature',
      value: await one('select signature as k from oauth2_refresh_tokens where nid = $1 and client_id = $2 limit 1'),
    };
    const flow: Template = {
      table: 'oauth2_flows',
      key: 'consent_request_id',
      value: await one('select consent_request_id as k from oauth2_flows where nid = $1 and client_id = $2 limit 1'),
    };
    const ls: Template = {
      table: 'oauth2_login_sessions',
      key: 'id',
      value: await one(
        `select id as k from oauth2_login_sessions where nid = $1 and subject = (
           select subject from oauth2_flows where nid = $1 and client_id = $2 limit 1) limit 1`,
      ),
    };
    const client: Template = { table: 'oauth2_clients', key: 'id', value: template.client_id };
    // The access tokens' template, apart: the other connection holds oauth2_refresh_tokens locked
    // (its indexes dropped) while this one loads access tokens.
    await a.query(
      'create temp table volume_token as select * from oauth2_refresh_tokens where nid = $1 and signature = $2',
      [NID, rt.value],
    );
    const counts = (n: number): [number, number, number] => [v.clients, v.subjects, n];
    // Grant k: issued `age` minutes ago. Access tokens with k % 10 < 6 are over an hour old (so
    // expired), the others at most 50 minutes; refresh tokens with k % 10 < 4 are over 30 days old.
    const atAge = `(case when k % 10 < 6 then 61 + k % 43000 else k % 50 end)`;
    const rtAge = `(case when k % 10 < 4 then 43201 + k % 20000 else k % 43000 end)`;
    const grant = {
      request_id: `md5('volume:grant:' || k)::uuid::text`,
      client_id: CLIENT,
      subject: SUBJECT,
    };
    // Login session k belongs to subject 1 + k % subjects (10 each at full volume); k % 10 < 3: expired.
    const lsAge = `(case when k % 10 < 3 then 43201 + k % 20000 else k % 43000 end)`;
    // Consent session k: login session k's subject and id, a client; k % 10 < 2: past remember_for.
    const flowAge = `(case when k % 10 < 2 then 43201 + k % 20000 else k % 43000 end)`;

    const first = async () => {
      await withoutIndexes(a, 'oauth2_clients', () =>
        clone(
          a,
          'oauth2_clients',
          client,
          {
            id: `'volume-client-' || k`,
            client_name: `'Volume client ' || k`,
            created_at: `now() - k * interval '1 minute'`,
            updated_at: `now() - k * interval '1 minute'`,
          },
          counts(v.clients),
        ),
      );
      await withoutIndexes(a, 'oauth2_access_tokens', () =>
        clone(
          a,
          'oauth2_access_tokens',
          { ...rt, table: 'volume_token' },
          {
            ...grant,
            signature: sig(`'volume:at:' || k`),
            requested_at: `now() - ${atAge} * interval '1 minute'`,
            expires_at: `now() - ${atAge} * interval '1 minute' + interval '1 hour'`,
          },
          counts(v.tokens),
        ),
      );
      await withoutIndexes(a, 'oauth2_login_sessions', () =>
        clone(
          a,
          'oauth2_login_sessions',
          ls,
          {
            id: `md5('volume:ls:' || k)::uuid::text`,
            subject: `'volume-user-' || (1 + k % $4::int)`,
            authenticated_at: `now() - ${lsAge} * interval '1 minute'`,
            remember: 'true',
            expires_at: `now() - ${lsAge} * interval '1 minute' + interval '30 days'`,
          },
          counts(v.loginSessions),
        ),
      );
    };
    const second = async () => {
      await withoutIndexes(b, 'oauth2_refresh_tokens', () =>
        clone(
          b,
          'oauth2_refresh_tokens',
          rt,
          {
            ...grant,
            signature: sig(`'volume:rt:' || k`),
            access_token_signature: sig(`'volume:at:' || k`),
            requested_at: `now() - ${rtAge} * interval '1 minute'`,
            expires_at: `now() - ${rtAge} * interval '1 minute' + interval '30 days'`,
            active: 'true',
            used_times: '0',
            first_used_at: 'null',
          },
          counts(v.tokens),
        ),
      );
      await withoutIndexes(b, 'oauth2_flows', () =>
        clone(
          b,
          'oauth2_flows',
          flow,
          {
            consent_request_id: `md5('volume:consent:' || k)::uuid::text`,
            login_challenge_id: `md5('volume:login:' || k)::uuid::text`,
            client_id: CLIENT,
            subject: `'volume-user-' || (1 + k % $4::int)`,
            login_session_id: `md5('volume:ls:' || k)::uuid::text`,
            requested_at: `now() - ${flowAge} * interval '1 minute'`,
            authenticated_at: `now() - ${flowAge} * interval '1 minute'`,
            handled_at: `now() - ${flowAge} * interval '1 minute'`,
            remember: 'true',
            remember_for: '2592000',
            expires_at: `now() - ${flowAge} * interval '1 minute' + interval '30 days'`,
          },
          counts(v.consentSessions),
        ),
      );
      await b.query(
        `insert into dsync_webhook_logs (id, directory_id, event_id, webhook_endpoint, payload, status, status_code,
           delivered, error, attempt, created_at, completed_at, duration_ms)
         select gen_random_uuid(), $1::uuid, gen_random_uuid(), 'https://hooks.example.com/dsync',
           json_build_object('event', 'user.updated', 'tenant', 'volume', 'product', 'volume',
             'directory_id', $1::uuid::text, 'data', json_build_object('id', md5('volume:user:' || k)::uuid::text)),
           'delivered', 200, true, null, 1, now() - k * interval '5 seconds',
           now() - k * interval '5 seconds' + interval '40 ms', 40
         from generate_series(1, $2::int) k`,
        [dir.id, v.history],
      );
      await b.query(
        `insert into audit_events (time, type, actor_kind, actor_id, target_kind, target_id, outcome, details)
         select now() - k * interval '5 seconds', e.type, 'subject', 'volume-user-' || (1 + k % $3::int), 'client',
           'volume-client-' || (1 + k % $2::int), 'success', '{}'::jsonb
         from generate_series(1, $1::int) k,
           lateral (select (array['oauth2.login.accepted', 'oauth2.consent.granted', 'oauth2.tokens.issued'])[1 + k % 3]
             as type) e`,
        [v.history, v.clients, v.subjects],
      );
    };
    await Promise.all([first(), second()]);
    await a.query(`vacuum (analyze) ${TABLES.join(', ')}`);
    const rows: Record<string, number> = {};
    for (const table of TABLES) {
      const { rows: r } = await a.query<{ n: number }>(`select count(*)::int as n from ${table}`);
      rows[table] = r[0]?.n ?? 0;
    }
    const { rows: e } = await a.query<{ n: number }>(
      `select (select count(*) from oauth2_access_tokens where expires_at < now())
         + (select count(*) from oauth2_refresh_tokens where expires_at < now()) as n`,
    );
    return { rows, expiredTokens: Number(e[0]?.n ?? 0), seconds: (performance.now() - started) / 1000 };
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
}
