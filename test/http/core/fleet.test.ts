/**
 * A fleet on one database: 2 `serve all` and 3 `worker` processes started from the CLI, mixed
 * OAuth2 and SCIM traffic through a stand-in load balancer (a request whose connection dies is sent
 * to the other web process), one worker and one web process SIGKILLed at random moments and
 * restarted, and short-lived workers killed within their first second. A webhook receiver on
 * 127.0.0.1 fails about 10 % of deliveries. Checked, through what a client, a receiver and an
 * operator's SQL can see:
 * - every committed SCIM change has exactly its events delivered (by event id), in each
 *   directory's order; nothing for a change that did not commit;
 * - no job completes twice (except one re-run after its worker was killed before recording it);
 * - 20 concurrent refreshes of one refresh token spread over both web processes: one success;
 * - each crontab entry is scheduled once per tick across the fleet (three workers starting at
 *   once back-fill the same missed ticks);
 * - no job is ever locked by a worker pool that is not registered as live (a worker dying in its
 *   first milliseconds cannot leave a job to graphile-worker's 4-hour stale-lock sweep);
 * - no 5xx answer anywhere.
 * `FLEET_SEED=<n>` repeats a run's random moments (the seed is printed when a check fails).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { API_KEY, createDirectory, scimClient } from '../../helpers/dsync.ts';
import { type Fleet, prng, startFleet } from '../../helpers/fleet.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { codeTokens, introspect, refresh, tokenRequest } from '../../helpers/tokens.ts';
import { scimUser } from '../../helpers/webhooks.ts';

const SEED = Number(process.env.FLEET_SEED ?? Math.floor(Math.random() * 2 ** 31));
const rand = prng(SEED);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const DIRECTORIES = 4;
const OPS_PER_DIRECTORY = 24;
const TOKEN_REQUESTS = 40;
const REFRESHES = 20;
const SECRET = 'whsec-fleet';

let db: TestDatabase;
let admin: pg.Client;
let fleet: Fleet;
let rx: Receiver;
let dir: string;
const fiveXX: string[] = [];
let failovers = 0;

/** The TestServer shape the HTTP helpers need, for one web slot. */
const server = (i: number) =>
  ({ publicUrl: fleet.webs[i]?.publicUrl, adminUrl: fleet.webs[i]?.adminUrl }) as TestServer;

const connectionError = (e: unknown) => e instanceof TypeError && /fetch failed/.test(e.message);

/**
 * The load balancer: a random web process; a request whose connection fails goes to a web
 * process again (possibly the same one, restarted). Reports whether a connection failed first.
 */
async function balanced<T extends { status: number }>(
  what: string,
  fn: (s: TestServer) => Promise<T>,
): Promise<{ r: T; retried: boolean }> {
  let retried = false;
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fn(server(Math.floor(rand() * fleet.webs.length)));
      if (r.status >= 500) fiveXX.push(`${what}: ${r.status}`);
      return { r, retried };
    } catch (e) {
      if (!connectionError(e)) throw e;
      retried = true;
      failovers++;
      await sleep(50);
    }
  }
  throw new Error(`${what}: no web process answered`);
}

interface Expected {
  event: string;
  email: string;
}

/** Sequential SCIM traffic on one directory; returns the events its committed changes must produce, in order. */
async function scimTraffic(d: Awaited<ReturnType<typeof createDirectory>>, k: number): Promise<Expected[]> {
  const expected: Expected[] = [];
  const users: Array<{ id: string; email: string }> = [];
  for (let n = 0; n < OPS_PER_DIRECTORY; n++) {
    if (users.length < 2 || rand() < 0.7) {
      const body = scimUser(`${k}-${n}`);
      const email = body.emails[0]?.value as string;
      const { r, retried } = await balanced('POST /Users', (s) => scimClient(s, d)('POST', '/Users', body));
      let id: string;
      if (r.status === 201) id = r.body.id;
      else if (r.status === 409 && retried) {
        // The first attempt committed before its web process died.
        const found = await balanced('GET /Users', (s) =>
          scimClient(s, d)('GET', `/Users?filter=${encodeURIComponent(`userName eq "${body.userName}"`)}`),
        );
        id = found.r.body.Resources[0].id;
      } else throw new Error(`POST /Users answered ${r.status} ${JSON.stringify(r.body)}`);
      users.push({ id, email });
      expected.push({ event: 'user.created', email });
    } else {
      const u = users.splice(Math.floor(rand() * users.length), 1)[0] as { id: string; email: string };
      const { r, retried } = await balanced('DELETE /Users', (s) => scimClient(s, d)('DELETE', `/Users/${u.id}`));
      if (!(r.status === 204 || r.status === 200 || (r.status === 404 && retried)))
        throw new Error(`DELETE /Users answered ${r.status} ${JSON.stringify(r.body)}`);
      expected.push({ event: 'user.deleted', email: u.email });
    }
    await sleep(rand() * 40);
  }
  return expected;
}

async function oauth2Traffic(): Promise<void> {
  const { r: created } = await balanced('POST /admin/clients', async (s) => {
    const c = await createClient(s, { grant_types: ['client_credentials'], response_types: ['token'] });
    return { status: 201, c };
  });
  const client = created.c;
  for (let n = 0; n < TOKEN_REQUESTS; n++) {
    const { r } = await balanced('POST /oauth2/token', (s) =>
      tokenRequest(s, client, { grant_type: 'client_credentials' }),
    );
    expect(r.status).toBe(200);
    if (n % 5 === 0) {
      const { r: i } = await balanced('POST /admin/oauth2/introspect', (s) => introspect(s, r.body.access_token));
      expect(i.body.active).toBe(true);
    }
    await sleep(rand() * 60);
  }
}

/** One worker and one web process SIGKILLed at random moments and restarted; short-lived workers killed early. */
async function chaos(): Promise<string[]> {
  const log: string[] = [];
  const killWorker = (async () => {
    await sleep(200 + rand() * 1500);
    const slot = Math.floor(rand() * 3);
    const p = fleet.worker[slot];
    if (p) {
      log.push(`kill ${p.name}`);
      await fleet.kill(p);
    }
    await sleep(100 + rand() * 600);
    await fleet.startWorker(slot);
  })();
  const killWeb = (async () => {
    await sleep(400 + rand() * 2000);
    const slot = Math.floor(rand() * 2);
    const p = fleet.web[slot];
    if (p) {
      log.push(`kill ${p.name}`);
      await fleet.kill(p);
    }
    await sleep(100 + rand() * 600);
    await fleet.startWeb(slot);
  })();
  const earlyDeaths = (async () => {
    for (let i = 0; i < 3; i++) {
      const p = await fleet.startWorker(3, { wait: false });
      const at = Math.floor(rand() * 1500);
      await sleep(at);
      log.push(`kill ${p.name} ${at} ms after spawn`);
      await fleet.kill(p);
    }
  })();
  await Promise.all([killWorker, killWeb, earlyDeaths]);
  return log;
}

beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Client({ connectionString: db.url });
  admin.on('error', () => {});
  await admin.connect();
  // What an operator could watch in SQL: every job ever added, and any job locked by a pool that is
  // not registered as live (one that no liveness sweep would ever release).
  await admin.query(`
    create table fleet_jobs (job_id bigint, task text, payload jsonb, at timestamptz default clock_timestamp());
    create table fleet_unregistered_locks (job_id bigint, locked_by text, at timestamptz default clock_timestamp());
    create function fleet_job_added() returns trigger language plpgsql as $$ begin
      insert into public.fleet_jobs (job_id, task, payload)
        select new.id, t.identifier, new.payload::jsonb from graphile_worker._private_tasks t where t.id = new.task_id;
      return new; end $$;
    create trigger fleet_job_added after insert on graphile_worker._private_jobs
      for each row execute function fleet_job_added();
    create function fleet_job_locked() returns trigger language plpgsql as $$ begin
      if new.locked_by is not null and new.locked_by is distinct from old.locked_by
         and not exists (select 1 from public.worker_pools p where p.id = new.locked_by) then
        insert into public.fleet_unregistered_locks (job_id, locked_by) values (new.id, new.locked_by);
      end if;
      return new; end $$;
    create trigger fleet_job_locked before update of locked_by on graphile_worker._private_jobs
      for each row execute function fleet_job_locked();
    -- The fleet's extra crontab line was last scheduled 6 minutes ago: starting workers back-fill it.
    insert into graphile_worker._private_known_crontabs (identifier, known_since, last_execution)
      values ('fleet_tick', now() - interval '6 minutes', now() - interval '6 minutes');
  `);
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-fleet-'));
  const crontab = join(dir, 'crontab');
  writeFileSync(
    crontab,
    `${readFileSync(join(import.meta.dirname, '../../../crontab'), 'utf8')}\n* * * * * dsync_webhook_maintenance ?id=fleet_tick&fill=5m&max=1 {fleet:"tick"}\n`,
  );
  rx = await startReceiver(() => (rand() < 0.1 ? 500 : 200));
  fleet = await startFleet({
    dsn: db.url,
    webs: 2,
    workers: 3,
    env: { DSYNC_API_KEYS: API_KEY, DSYNC_WEBHOOK_TIMEOUT: '5s' },
    workerEnv: { WORKER_CRONTAB: crontab },
  });
  await Promise.all([fleet.startWeb(0), fleet.startWeb(1)]);
  await Promise.all([fleet.startWorker(0), fleet.startWorker(1), fleet.startWorker(2)]);
}, 150_000);

afterAll(async () => {
  await fleet?.stop();
  await rx?.close();
  await admin?.end();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe(`a fleet of 2 web and 3 worker processes (FLEET_SEED=${SEED})`, () => {
  it('loses and doubles nothing through SIGKILLs, rotates refresh tokens once, runs each cron tick once', async () => {
    // Retries of failed deliveries are due at once (graphile-worker's backoff is seconds to hours).
    const nudge = setInterval(() => {
      admin
        .query(`update graphile_worker._private_jobs set run_at = now()
                where locked_at is null and run_at > now() and attempts > 0 and attempts < max_attempts`)
        .catch(() => {});
    }, 250);
    try {
      const directories = [];
      for (let k = 0; k < DIRECTORIES; k++)
        directories.push(
          await createDirectory(server(k % 2), {
            tenant: `fleet${k}`,
            product: 'p',
            webhook_url: rx.url,
            webhook_secret: SECRET,
          }),
        );

      const [expected, , killed] = await Promise.all([
        Promise.all(directories.map((d, k) => scimTraffic(d, k))),
        oauth2Traffic(),
        chaos(),
      ]);
      const context = `seed ${SEED}; ${killed.join(', ')}; ${failovers} failovers`;

      // Refresh-token rotation: 20 concurrent refreshes of one token, alternating web processes.
      const client = await createClient(server(0));
      const tok = await codeTokens(server(1), client);
      const replies = await Promise.all(
        Array.from({ length: REFRESHES }, (_, i) => refresh(server(i % 2), client, tok.refresh_token as string)),
      );
      expect(
        replies.filter((r) => r.status === 200),
        context,
      ).toHaveLength(1);
      for (const r of replies.filter((x) => x.status !== 200)) {
        expect(r.status, context).toBe(400);
        expect(r.body.error).toBe('invalid_grant');
      }

      // Every committed change's events arrive, each directory in order (first successful delivery of each id).
      const want = new Map(directories.map((d, k) => [d.id, expected[k] as Expected[]]));
      const deliveredBy = () => {
        const seen = new Set<string>();
        const by = new Map<string, Array<{ event: string; email: string; seq: number }>>();
        for (const r of rx.delivered()) {
          if (seen.has(r.body.id)) continue;
          seen.add(r.body.id);
          const list = by.get(r.body.directory_id) ?? [];
          list.push({ event: r.body.event, email: r.body.data.email, seq: r.body.seq });
          by.set(r.body.directory_id, list);
        }
        return by;
      };
      const deadline = Date.now() + 60_000;
      while ([...want].some(([id, w]) => (deliveredBy().get(id)?.length ?? 0) < w.length) && Date.now() < deadline)
        await sleep(100);
      const got = deliveredBy();
      for (const [id, w] of want) {
        const g = got.get(id) ?? [];
        expect(
          g.map(({ event, email }) => ({ event, email })),
          context,
        ).toEqual(w);
        expect(
          g.map((e) => e.seq),
          context,
        ).toEqual(w.map((_, i) => i + 1));
      }
      expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
      expect(rx.requests.some((r) => r.status === 500)).toBe(true); // the receiver did fail some

      // No job completed twice, unless the first completion was by a worker killed before recording it.
      const completions = new Map<string, string[]>();
      for (const p of fleet.procs.filter((x) => x.role === 'worker'))
        for (const l of p.lines) {
          const m = /^Completed task (\d+) /.exec(String(l.msg ?? ''));
          if (m) completions.set(m[1] as string, [...(completions.get(m[1] as string) ?? []), p.name]);
        }
      expect(completions.size).toBeGreaterThan(0);
      const killedNames = new Set(fleet.procs.filter((p) => p.killed).map((p) => p.name));
      for (const [job, by] of completions)
        for (const name of by.slice(0, -1)) expect(killedNames.has(name), `job ${job} completed by ${by}`).toBe(true);

      // Each crontab entry was scheduled once per tick across the fleet; the missed ticks were back-filled.
      const { rows: ticks } = await admin.query<{ task: string; payload: string; ts: string; n: number }>(`
        select task, (payload - '_cron')::text as payload, payload->'_cron'->>'ts' as ts, count(*)::int as n
        from fleet_jobs where payload ? '_cron' group by 1, 2, 3 order by 3`);
      expect(ticks.filter((t) => t.n !== 1)).toEqual([]);
      expect(ticks.filter((t) => t.payload === '{"fleet": "tick"}').length).toBeGreaterThanOrEqual(4);

      // No job was ever locked by an unregistered pool, and dead pools left the registry.
      const { rows: unregistered } = await admin.query('select * from fleet_unregistered_locks');
      expect(unregistered, context).toEqual([]);
      const live = new Set(fleet.worker.filter((p) => p && p.child.exitCode === null && !p.killed).map((p) => p?.name));
      expect(live.size).toBe(3);
      const poolDeadline = Date.now() + 20_000;
      let pools = 0;
      while (Date.now() < poolDeadline) {
        pools = (await admin.query<{ n: number }>('select count(*)::int as n from worker_pools')).rows[0]?.n ?? 0;
        if (pools === 6) break;
        await sleep(100);
      }
      // Two pools per live worker process (its jobs and its webhook senders' lane), none of the dead.
      expect(pools).toBe(6);

      expect(fiveXX, context).toEqual([]);
    } finally {
      clearInterval(nudge);
    }
  }, 150_000);
});
