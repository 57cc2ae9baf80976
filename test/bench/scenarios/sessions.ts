/**
 * Login-session revocation by subject (gatehouse only: the target is absolute, 100,000 sessions in
 * under 10 s with no transaction over `oauth2.session_revocation.batch_size`). Each round seeds
 * 100,000 login sessions of one subject straight into the database (one `INSERT … SELECT
 * generate_series`, not measured), 1% of them with a consent flow of a client that registered
 * back-channel and front-channel logout URIs (a loopback receiver), then times one
 * `DELETE /admin/oauth2/auth/sessions/login?subject=…` to its answer.
 *
 * Reported: sessions revoked per second (the req/s column: a "request" is one session), the time of
 * the whole revocation (p50/p99 columns), SQL statements per session, and after the rounds the
 * transactions per revocation (counted `BEGIN`s) and the back-channel notifications the worker
 * delivered to the receiver afterwards. `--smoke` revokes 2,000 sessions; BENCH_REVOKE_SESSIONS
 * sets another count, BENCH_REVOKE_BATCH another batch size.
 */
import pg from 'pg';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import type { Proc } from '../proc.ts';
import type { DriveResult, Scenario, Side } from '../types.ts';

const SMOKE = process.argv.includes('--smoke');
const SESSIONS = Number(process.env.BENCH_REVOKE_SESSIONS ?? (SMOKE ? 2_000 : 100_000));

import { DEFAULT_NETWORK_ID as NID } from '../../../src/oauth2/tables.ts';

/** BENCH_REVOKE_BATCH: another `oauth2.session_revocation.batch_size` (a gatehouse process of its own). */
const BATCH = process.env.BENCH_REVOKE_BATCH ? Number(process.env.BENCH_REVOKE_BATCH) : undefined;

let rx: Receiver | undefined;
let round = 0;
const last: Record<string, number | string> = {};

async function seed(p: Proc, subject: string, n: number, clientId: string): Promise<void> {
  const c = new pg.Client({ connectionString: p.dsn });
  await c.connect();
  try {
    await c.query(
      `insert into oauth2_login_sessions (nid, id, subject, authenticated_at, remember, expires_at)
       select $1, $2 || '-' || g, $2, now(), true, now() + interval '1 day' from generate_series(1, $3::int) g`,
      [NID, subject, n],
    );
    // 1% of the sessions had a consent flow with a client that wants logout notifications.
    await c.query(
      `insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject, login_session_id,
         request_url, requested_at, handled_at, session_data)
       select $1, $2 || '-c-' || g, $2 || '-l-' || g, $3, $2, $2 || '-' || (g * 100), 'http://127.0.0.1/', now(), now(), ''
       from generate_series(1, $4::int) g`,
      [NID, subject, clientId, Math.floor(n / 100)],
    );
    await c.query('analyze oauth2_login_sessions');
  } finally {
    await c.end();
  }
}

/** Waits (bounded) until the receiver has `n` back-channel notifications more than `before`; returns how many came. */
async function notificationsAfter(before: number, n: number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  const got = () => (rx?.delivered().filter((r) => r.path.endsWith('/backchannel')).length ?? 0) - before;
  while (got() < n && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  return got();
}

const gatehouse: Side = (() => {
  let clientId = '';
  return {
    url: (p) => p.adminUrl,
    async setup(p) {
      rx ??= await startReceiver();
      const r = await fetch(`${p.adminUrl}/admin/clients`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: ['http://127.0.0.1:9/cb'],
          backchannel_logout_uri: `${rx.url}/backchannel`,
          frontchannel_logout_uri: `${rx.url}/frontchannel`,
        }),
      });
      if (r.status !== 201) throw new Error(`client create answered ${r.status}: ${await r.text()}`);
      clientId = ((await r.json()) as { client_id: string }).client_id;
      return [];
    },
    async drive(p, o): Promise<DriveResult> {
      const subject = `bench-revoke-${++round}`;
      const n = o.warmup ? Math.ceil(SESSIONS / 10) : SESSIONS;
      await seed(p, subject, n, clientId);
      const received = rx?.delivered().filter((r) => r.path.endsWith('/backchannel')).length ?? 0;
      const before = await p.stats();
      const started = performance.now();
      const res = await fetch(`${p.adminUrl}/admin/oauth2/auth/sessions/login?subject=${encodeURIComponent(subject)}`, {
        method: 'DELETE',
      });
      const ms = performance.now() - started;
      const after = await p.stats();
      const c = new pg.Client({ connectionString: p.dsn });
      await c.connect();
      const left = (await c.query('select count(*)::int as n from oauth2_login_sessions where subject = $1', [subject]))
        .rows[0] as { n: number };
      await c.end();
      const ok = res.status === 204 && left.n === 0;
      if (!ok)
        process.stderr.write(`revocation answered ${res.status}: ${await res.text()}; ${left.n} sessions left\n`);
      if (!o.warmup) {
        Object.assign(last, {
          sessions: n,
          seconds: (ms / 1000).toFixed(2),
          'batch size': BATCH ?? 'default',
          transactions: (after.statements.begin ?? 0) - (before.statements.begin ?? 0),
          // Delivered by the worker after the answer (not part of the time above); bounded wait.
          'back-channel notifications delivered': await notificationsAfter(received, Math.floor(n / 100), 30_000),
        });
      }
      return { units: ok ? n : 0, errors: ok ? 0 : 1, latencies: ok ? [ms] : [], elapsedMs: ms };
    },
    report: async () => ({ ...last }),
  };
})();

export const scenarios: Scenario[] = [
  {
    name: `login-session revocation by subject, ${SESSIONS.toLocaleString('en')} sessions (per session)`,
    connections: 1,
    ...(BATCH ? { overrides: { 'oauth2.session_revocation.batch_size': BATCH } } : {}),
    gatehouse,
  },
];

/** Closes the loopback receiver (called by the runner at the end). */
export async function closeAll(): Promise<void> {
  await rx?.close();
}
