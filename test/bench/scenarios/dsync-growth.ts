/**
 * Directory sync as data grows (issue 30): does a SCIM create cost more in a full directory than in
 * an empty one?
 *
 * - Growth: 50,000 Okta-shaped `POST /Users` into one directory, in rounds of 5,000 (each round is
 *   a step: the directory holds 5,000 more users at the start of the next one), 20 connections,
 *   both sides with a webhook (the same work, as in scenarios/dsync.ts), Jackson beside it growing
 *   its own directory round for round. Reported per round: creates/s, and per create the SQL
 *   statements the process sent and the buffers its database touched (pg_statio of every table of
 *   that database: counts, not time, so that a noisy machine does not hide a growth). A backend
 *   sends its counters at most once a second, and an idle one after 10 s: a round's buffers are
 *   read from the start of the round to the start of the next (so they include the delivery of the
 *   round's webhooks), the last round's 11 s after it ended.
 * - Volume: `POST /Users` into the large directory of the volume fixture (test/bench/dsync-volume.ts:
 *   100,000 users, 5,000 groups, 500,000 memberships, 50 smaller directories, 1,000,000 events),
 *   gatehouse only: loading the same volume into Jackson's key-value store is not done here.
 *
 * Each scenario has a gatehouse process and database of its own (`fresh`). `--smoke`: 2 rounds of
 * 200 creates, and the fixture at a hundredth. BENCH_GROWTH_STEP and BENCH_GROWTH_ROUNDS change the
 * growth's round size and count.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import { type LoadedVolume, loadDsyncVolume, SMOKE_VOLUME, VOLUME } from '../dsync-volume.ts';
import type { Proc } from '../proc.ts';
import type { DriveResult, Scenario, Side } from '../types.ts';
import { API_KEY, type Dir, ghDir, jDirHook, oktaUser, receiver, SCIM_JSON, settled } from './dsync.ts';

const SMOKE = process.argv.includes('--smoke');
const STEP = Number(process.env.BENCH_GROWTH_STEP ?? (SMOKE ? 200 : 5_000));
const ROUNDS = Number(process.env.BENCH_GROWTH_ROUNDS ?? (SMOKE ? 2 : 10));

/** Buffers touched: found in shared_buffers (hits), and read into it from outside (the OS cache or the disk). */
interface Buffers {
  hits: number;
  reads: number;
}

/** Buffers touched so far in the database (every table and index of it). */
async function buffers(dsn: string): Promise<Buffers> {
  const c = new pg.Client({ connectionString: dsn });
  await c.connect();
  try {
    const { rows } = await c.query<{ hits: string; reads: string }>(`
      select coalesce(sum(heap_blks_hit + coalesce(idx_blks_hit, 0) + coalesce(toast_blks_hit, 0)
          + coalesce(tidx_blks_hit, 0)), 0) as hits,
        coalesce(sum(heap_blks_read + coalesce(idx_blks_read, 0) + coalesce(toast_blks_read, 0)
          + coalesce(tidx_blks_read, 0)), 0) as reads
      from pg_statio_user_tables`);
    return { hits: Number(rows[0]?.hits), reads: Number(rows[0]?.reads) };
  } finally {
    await c.end();
  }
}

interface Measured extends DriveResult {
  statementsPerCreate: number;
}

/**
 * The database's buffer counter at the start of each measured round, and once more 11 s after the
 * last (when every backend has sent its counters; at once in the smoke run): buffers per create of
 * each round.
 */
class BufferLedger {
  private readonly marks: Buffers[] = [];
  private ended = 0;
  async start(p: Proc): Promise<void> {
    this.marks.push(await buffers(p.dsn));
  }
  end(): void {
    this.ended = performance.now();
  }
  /** Per create of each round: buffers touched (`all`), and of them read from outside shared_buffers. */
  async perCreate(p: Proc, rounds: Measured[]): Promise<{ all: number[]; reads: number[] }> {
    if (this.marks.length === rounds.length) {
      const wait = SMOKE ? 0 : this.ended + 11_000 - performance.now();
      await new Promise((r) => setTimeout(r, Math.max(0, wait)));
      this.marks.push(await buffers(p.dsn));
    }
    const per = (f: (b: Buffers) => number) =>
      rounds.map((m, i) => (m.units ? (f(this.marks[i + 1] as Buffers) - f(this.marks[i] as Buffers)) / m.units : 0));
    return { all: per((b) => b.hits + b.reads), reads: per((b) => b.reads) };
  }
}

/**
 * `POST /Users` into `dir` from `connections` connections, `amount` creates (or for `seconds`),
 * user names unique per run (`tag`, counter `next`).
 */
async function creates(
  p: Proc,
  dir: Dir,
  o: { connections: number; amount?: number; seconds?: number },
  next: () => number,
): Promise<Measured> {
  const tag = randomBytes(3).toString('hex');
  const s0 = await p.stats();
  const started = performance.now();
  let last = started;
  const run = autocannon({
    url: p.url,
    connections: o.connections,
    ...(o.amount ? { amount: o.amount } : { duration: o.seconds ?? 1 }),
    requests: [
      {
        method: 'POST',
        path: `${dir.path}/Users`,
        headers: { ...SCIM_JSON, authorization: `Bearer ${dir.secret}` },
        setupRequest: (req) => {
          const i = next();
          return { ...req, body: oktaUser(`g${i}-${tag}@example.com`, i) };
        },
      },
    ],
  });
  // The time of the last answer: autocannon notices the amount reached only at its next 1 s tick.
  run.on('response', () => {
    last = performance.now();
  });
  const r = await run;
  const elapsedMs = last - started;
  const s1 = await p.stats();
  const units = r.requests.total - r.non2xx;
  return {
    units,
    errors: r.errors + r.timeouts + r.non2xx,
    latencies: [],
    p50: r.latency.p50,
    p99: r.latency.p99,
    elapsedMs,
    statementsPerCreate: units ? (s1.queries - s0.queries) / units : 0,
  };
}

const fmt = (xs: number[], d = 0) => xs.map((x) => x.toLocaleString('en', { maximumFractionDigits: d })).join(' · ');

/** One side of the growth: each measured round adds STEP users to the same directory. */
function growth(dirOf: (p: Proc) => Promise<Dir>): Side {
  const state: { dir?: Dir; warm?: Dir; n: number; rounds: Measured[] } = { n: 0, rounds: [] };
  const ledger = new BufferLedger();
  return {
    url: (p) => p.url,
    async setup(p) {
      state.dir = await dirOf(p);
      return [];
    },
    async drive(p, o) {
      // The warm-up creates into a directory of its own: the measured one starts empty.
      if (o.warmup) state.warm ??= await dirOf(p);
      const dir = (o.warmup ? state.warm : state.dir) as Dir;
      if (!o.warmup) await ledger.start(p);
      const m = await creates(
        p,
        dir,
        { connections: o.connections, amount: o.warmup ? Math.min(STEP, 1_000) : STEP },
        () => state.n++,
      );
      if (!o.warmup) {
        ledger.end();
        state.rounds.push(m);
      }
      return m;
    },
    async report(p) {
      const r = state.rounds;
      const perCreate = await ledger.perCreate(p, r);
      return {
        'users before each round': fmt(r.map((_, i) => i * STEP)),
        'creates/s': fmt(r.map((m) => m.units / (m.elapsedMs / 1000))),
        'p99 ms': fmt(r.map((m) => m.p99 ?? 0)),
        'SQL statements per create': fmt(
          r.map((m) => m.statementsPerCreate),
          2,
        ),
        'buffers per create (whole database)': fmt(perCreate.all),
        '… of them read from outside shared_buffers': fmt(perCreate.reads, 2),
        'last round ÷ first (creates/s)': r.length
          ? (r.at(-1)!.units / r.at(-1)!.elapsedMs / (r[0]!.units / r[0]!.elapsedMs)).toFixed(2)
          : '–',
      };
    },
  };
}

/** gatehouse's create into the large directory of the volume fixture. */
function intoVolume(): Side {
  const state: { volume?: LoadedVolume; n: number; rounds: Measured[] } = { n: 0, rounds: [] };
  const ledger = new BufferLedger();
  return {
    url: (p) => p.url,
    async setup(p) {
      const rx = await receiver();
      state.volume = await loadDsyncVolume(
        { adminUrl: p.adminUrl, dsn: p.dsn, apiKey: API_KEY },
        SMOKE ? SMOKE_VOLUME : VOLUME,
        rx.url,
      );
      return [];
    },
    async drive(p, o) {
      const { large } = state.volume as LoadedVolume;
      if (!o.warmup) await ledger.start(p);
      const m = await creates(p, large, { connections: o.connections, seconds: o.seconds }, () => state.n++);
      if (!o.warmup) {
        ledger.end();
        state.rounds.push(m);
      }
      return m;
    },
    async report(p) {
      const v = state.volume as LoadedVolume;
      const perCreate = await ledger.perCreate(p, state.rounds);
      return {
        'fixture loaded in, s': v.seconds.toFixed(1),
        ...Object.fromEntries(
          Object.entries(v.rows).map(([t, n]) => [t.replace('dsync_', ''), n.toLocaleString('en')]),
        ),
        'SQL statements per create': fmt(
          state.rounds.map((m) => m.statementsPerCreate),
          2,
        ),
        'buffers per create (whole database)': fmt(perCreate.all),
        '… of them read from outside shared_buffers': fmt(perCreate.reads, 2),
      };
    },
  };
}

export const scenarios: Scenario[] = [
  {
    name: `SCIM POST /Users growth: ${(STEP * ROUNDS).toLocaleString('en')} creates into one directory in rounds of ${STEP.toLocaleString('en')} (both with a webhook)`,
    connections: 20,
    fresh: true,
    rounds: ROUNDS,
    gatehouse: settled(growth(ghDir), []),
    peer: { kind: 'jackson', side: growth(jDirHook) },
  },
  {
    name: `SCIM POST /Users into a directory of ${(SMOKE ? SMOKE_VOLUME : VOLUME).large.users.toLocaleString('en')} users (volume fixture, gatehouse only)`,
    connections: 20,
    fresh: true,
    gatehouse: settled(intoVolume(), []),
  },
];
