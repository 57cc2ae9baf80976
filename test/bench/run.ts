/**
 * `npm run bench`: gatehouse beside its peers, in the same run, on loopback. Every scenario runs
 * gatehouse and its peer (oidc-provider for OAuth 2.0, BoxyHQ Jackson for directory sync) in their
 * own processes, alternating, for BENCH_ROUNDS rounds of BENCH_SECONDS each after a warm-up;
 * autocannon fires from this process. Reported per side: medians of the rounds (req/s, p50, p99),
 * errors and non-2xx answers, RSS after the load, SQL statements per request (gatehouse and Jackson
 * count every `pg` query they send), and the ratio gatehouse ÷ peer (median of per-round ratios).
 * The table goes to stdout, every round to bench-results.json.
 *
 *   npm run bench                        # everything, defaults: 3 rounds × 5 s, 50 connections
 *   npm run bench -- token discovery     # only scenarios whose name contains one of the words
 *   npm run bench -- --smoke             # CI: each gatehouse scenario once for 1 s, no peers
 *   BENCH_RATE=200 npm run bench -- webhook   # paced: 200 requests/s in all instead of flat out
 *   BENCH_BASELINE=main~5 npm run bench       # gatehouse beside itself at another commit, not the peers
 *   BENCH_EXCLUDE='full database,growth' npm run bench   # leaves out scenarios whose name has one of the words
 *   BENCH_PEERS=0 npm run bench          # gatehouse alone, no peer (its memory after each scenario is listed)
 *   BENCH_HEAP_SNAPSHOTS=<dir>           # a V8 heap snapshot of gatehouse at its start and after each scenario
 *   BENCH_NODE_FLAGS='--max-semi-space-size=16 --trace-gc' BENCH_STDOUT_DIR=<dir>   # other V8 flags, its stdout kept
 * gatehouse runs from the compiled package (`npm run build` first), the smoke run from the sources.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { startEmbeddedPostgres } from '../../src/core/db/embedded.ts';
import { cpuMark, cpuSpent } from './cpu.ts';
import { type Proc, type Stats, startGatehouse, startPeer } from './proc.ts';
import type { BenchRequest, PeerKind, Scenario, Side } from './types.ts';

const args = process.argv.slice(2);
const SMOKE = args.includes('--smoke');
const filters = args.filter((a) => !a.startsWith('--')).map((s) => s.toLowerCase());
const SECONDS = Number(process.env.BENCH_SECONDS ?? (SMOKE ? 1 : 5));
const ROUNDS = SMOKE ? 1 : Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? (SMOKE ? 4 : 50));
const WARMUP_SECONDS = SMOKE ? 0 : Math.min(2, SECONDS);
const OUT = process.env.BENCH_OUT ?? 'bench-results.json';
/** Requests per second over all connections (latency at a given load rather than at saturation). */
const RATE = Number(process.env.BENCH_RATE ?? 0);
/** BENCH_PEERS=0: gatehouse alone (no peer is installed or started), e.g. to look at its memory. */
const PEERS = process.env.BENCH_PEERS !== '0';
/** BENCH_HEAP_SNAPSHOTS=<dir>: a V8 heap snapshot of each gatehouse process after each scenario (diagnosis only). */
const SNAPSHOTS = process.env.BENCH_HEAP_SNAPSHOTS;

const cleanups: Array<() => Promise<void>> = [];
const loadAtStart = loadavg()[0] as number;
/** The scenarios; `instance` imports the modules anew (their sides keep state of their own). */
async function loadScenarios(instance = ''): Promise<Scenario[]> {
  const dir = join(import.meta.dirname, 'scenarios');
  const out: Scenario[] = [];
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.ts'))
    .sort()) {
    const mod = (await import(`${pathToFileURL(join(dir, f)).href}${instance}`)) as {
      scenarios: Scenario[];
      closeAll?: () => Promise<void>;
    };
    out.push(...mod.scenarios);
    if (mod.closeAll) cleanups.push(mod.closeAll);
  }
  return out;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
  rssMb: number;
  /** gatehouse: where its memory was after the load, MB (see gatehouse-main.ts). */
  memory?: Record<string, number>;
  sqlPerRequest: number | undefined;
  /** CPU per request, ms: the side's process, and the PostgreSQL backends of its database. */
  cpuMs: { process: number; database: number } | undefined;
  /** Statement text → statements per request, during this run (largest first). */
  statements?: Record<string, number>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

let progress = '';
const say = (s: string) => {
  progress = s;
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${s}`);
  else process.stderr.write(`${s}\n`);
};

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] as number) : Number.NaN;
};

async function fire(
  p: Proc,
  side: Side,
  reqs: BenchRequest[],
  seconds: number,
  connections: number,
  warmup = false,
): Promise<Run> {
  const before = await p.stats();
  const cpuBefore = await cpuMark(p.pid, p.dsn);
  if (side.drive) {
    const d = await side.drive(p, { seconds, connections, warmup });
    return runOf(p, before, await p.stats(), cpuSpent(cpuBefore, await cpuMark(p.pid, p.dsn)), {
      rps: d.units / (d.elapsedMs / 1000),
      p50: d.p50 ?? pct(d.latencies, 0.5),
      p99: d.p99 ?? pct(d.latencies, 0.99),
      total: d.units,
      errors: d.errors,
      non2xx: 0,
    });
  }
  const url = side.url(p);
  let n = 0;
  const r = await autocannon({
    url,
    connections,
    duration: seconds,
    ...(RATE > 0 ? { overallRate: RATE } : {}),
    requests: reqs.map((q) => ({
      method: q.method ?? 'GET',
      path: q.path,
      headers: q.headers ?? {},
      ...(typeof q.body === 'string' ? { body: q.body } : {}),
      ...(typeof q.body === 'function'
        ? { setupRequest: (req: Record<string, unknown>) => ({ ...req, body: (q.body as (n: number) => string)(n++) }) }
        : {}),
      ...(q.each ? { setupRequest: (req: Record<string, unknown>) => ({ ...req, ...q.each?.(n++) }) } : {}),
    })),
  });
  return runOf(p, before, await p.stats(), cpuSpent(cpuBefore, await cpuMark(p.pid, p.dsn)), {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  });
}

function runOf(
  p: Proc,
  before: Stats,
  after: Stats,
  cpu: { processMs: number; databaseMs: number },
  m: { rps: number; p50: number; p99: number; total: number; errors: number; non2xx: number },
): Run {
  const total = m.total;
  return {
    rps: m.rps,
    p50: m.p50,
    p99: m.p99,
    requests: total,
    errors: m.errors,
    non2xx: m.non2xx,
    rssMb: Math.round(after.rss / 1048576),
    ...(after.memory ? { memory: after.memory } : {}),
    sqlPerRequest: p.kind === 'oidc-provider' || !total ? undefined : (after.queries - before.queries) / total,
    cpuMs: total ? { process: cpu.processMs / total, database: cpu.databaseMs / total } : undefined,
    statements: Object.fromEntries(
      Object.entries(after.statements)
        .map(([k, v]) => [k, total ? Math.round(((v - (before.statements[k] ?? 0)) / total) * 100) / 100 : 0] as const)
        .filter(([, v]) => v >= 0.01)
        .sort((a, b) => b[1] - a[1]),
    ),
  };
}

let stopPg = async () => {};
let databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-'));
  const epg = await startEmbeddedPostgres({ dir });
  databaseUrl = epg.url;
  stopPg = async () => {
    await epg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}

// gatehouse runs as users run it, from the compiled package (BENCH_SOURCES=1: from the TypeScript
// sources, as the smoke run does to stay quick). Node's type stripping costs memory of its own.
const BUILT = !SMOKE && process.env.BENCH_SOURCES !== '1';
if (BUILT) {
  say('building the package (npm run build)…');
  execFileSync('npm', ['run', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  process.env.BENCH_BUILT = '1';
}
const all = await loadScenarios();

/**
 * BENCH_BASELINE=<git ref>: every scenario runs gatehouse beside gatehouse at that commit instead
 * of beside the peers — a before/after of a change in one run, alternating as with a peer. The
 * commit's tree is exported to a temporary folder (its own dependencies installed unless its lock
 * file is this one's), built like this checkout, and run by its own test/bench/gatehouse-main.ts;
 * its scenarios are this checkout's, with sides of their own.
 */
const BASELINE = SMOKE ? undefined : process.env.BENCH_BASELINE;
let baselineRoot: string | undefined;
let baselineSides = new Map<string, Side>();
if (BASELINE) {
  const repo = join(import.meta.dirname, '../..');
  const git = (...a: string[]) => execFileSync('git', a, { cwd: repo, encoding: 'utf8' }).trim();
  const sha = git('rev-parse', '--verify', `${BASELINE}^{commit}`);
  baselineRoot = join(tmpdir(), `gatehouse-baseline-${sha.slice(0, 12)}`);
  if (!existsSync(join(baselineRoot, 'package.json'))) {
    say(`exporting ${BASELINE} (${sha.slice(0, 12)}) to ${baselineRoot}…`);
    rmSync(baselineRoot, { recursive: true, force: true });
    execFileSync('sh', ['-c', `mkdir -p "${baselineRoot}" && git archive ${sha} | tar -x -C "${baselineRoot}"`], {
      cwd: repo,
    });
    const sameLock =
      readFileSync(join(repo, 'package-lock.json'), 'utf8') ===
      readFileSync(join(baselineRoot, 'package-lock.json'), 'utf8');
    if (sameLock) symlinkSync(join(repo, 'node_modules'), join(baselineRoot, 'node_modules'));
    else
      execFileSync('npm', ['ci', '--no-audit', '--no-fund'], {
        cwd: baselineRoot,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
  }
  if (BUILT) {
    say(`building the baseline (${sha.slice(0, 12)})…`);
    execFileSync('npm', ['run', 'build'], { cwd: baselineRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  baselineSides = new Map((await loadScenarios('?baseline')).map((s) => [s.name, s.gatehouse]));
}
/** Which gatehouse process a scenario runs on: one per set of overrides, or its own (`fresh`, per group). */
const processKey = (s: Scenario) => JSON.stringify([s.overrides ?? {}, s.fresh ? (s.group ?? s.name) : '']);
/** BENCH_EXCLUDE: comma-separated words; a scenario whose name contains one is left out. */
const excluded = (process.env.BENCH_EXCLUDE ?? '')
  .split(',')
  .map((w) => w.trim().toLowerCase())
  .filter(Boolean);
const picked = (filters.length ? all.filter((s) => filters.some((f) => s.name.toLowerCase().includes(f))) : all).filter(
  (s) => !excluded.some((w) => s.name.toLowerCase().includes(w)),
);
// The smoke run takes the scenarios process by process (in the order each process first appears),
// so that one gatehouse at a time holds connections; a full run keeps the table's order.
const keys = [...new Set(picked.map(processKey))];
const chosen = SMOKE ? keys.flatMap((k) => picked.filter((s) => processKey(s) === k)) : picked;
const gatehouses = new Map<string, Proc>();
const peers = new Map<PeerKind, Proc>();
const baselines = new Map<string, Proc>();
const gatehouseFor = async (s: Scenario) => {
  const key = processKey(s);
  let p = gatehouses.get(key);
  if (!p) {
    p = await startGatehouse(databaseUrl as string, s.overrides ?? {});
    gatehouses.set(key, p);
    if (SNAPSHOTS) await p.heapSnapshot(join(SNAPSHOTS, `00-gatehouse-${p.pid}-started.heapsnapshot`));
  }
  return p;
};
const baselineFor = async (s: Scenario) => {
  const key = processKey(s);
  let p = baselines.get(key);
  if (!p) {
    p = await startGatehouse(databaseUrl as string, s.overrides ?? {}, baselineRoot);
    baselines.set(key, p);
  }
  return p;
};
const peerFor = async (kind: PeerKind) => {
  let p = peers.get(kind);
  if (!p) {
    p = await startPeer(kind, databaseUrl as string);
    peers.set(kind, p);
  }
  return p;
};

interface Row {
  scenario: string;
  connections: number;
  gatehouse: Run[];
  peer?: { kind: PeerKind | 'baseline'; runs: Run[] };
  ratios: number[];
  reports: Record<string, Record<string, number | string>>;
  /** gatehouse's memory after a full garbage collection, once the scenario's rounds are over. */
  memoryAfterGc?: Record<string, number> | undefined;
}

const rows: Row[] = [];
let failed = false;
try {
  let i = 0;
  /** Lets every side finish what the last load left behind (see Side.settle). */
  const settle = async (sides: Array<{ who: string; p: Proc; side: Side }>, label: string) => {
    for (const x of sides)
      if (x.side.settle) {
        say(`${label}: ${x.who} settling`);
        await x.side.settle(x.p);
      }
  };
  for (const s of chosen) {
    i++;
    const conns = SMOKE ? Math.min(CONNECTIONS, s.connections ?? CONNECTIONS) : (s.connections ?? CONNECTIONS);
    const label = `[${i}/${chosen.length}] ${s.name}`;
    say(`${label}: starting`);
    const gh = await gatehouseFor(s);
    const sides: Array<{ who: string; p: Proc; side: Side; reqs: BenchRequest[] }> = [
      { who: 'gatehouse', p: gh, side: s.gatehouse, reqs: await s.gatehouse.setup(gh) },
    ];
    const baselineSide = baselineRoot ? baselineSides.get(s.name) : undefined;
    if (baselineSide) {
      const bp = await baselineFor(s);
      sides.push({ who: 'baseline', p: bp, side: baselineSide, reqs: await baselineSide.setup(bp) });
    } else if (s.peer && PEERS && !SMOKE && !baselineRoot) {
      const pp = await peerFor(s.peer.kind);
      sides.push({ who: s.peer.kind, p: pp, side: s.peer.side, reqs: await s.peer.side.setup(pp) });
    }
    if (WARMUP_SECONDS) {
      for (const x of sides) {
        await settle(sides, label);
        say(`${label}: warm-up ${x.who}`);
        await fire(x.p, x.side, x.reqs, WARMUP_SECONDS, conns, true);
      }
    }
    const row: Row = { scenario: s.name, connections: conns, gatehouse: [], ratios: [], reports: {} };
    if (baselineSide) row.peer = { kind: 'baseline', runs: [] };
    else if (s.peer && PEERS && !SMOKE && !baselineRoot) row.peer = { kind: s.peer.kind, runs: [] };
    const rounds = s.rounds ?? ROUNDS;
    for (let round = 1; round <= rounds; round++) {
      // Alternate which side goes first, so neither always runs on the warmer (or busier) machine.
      const order = round % 2 ? sides : [...sides].reverse();
      const got: Record<string, Run> = {};
      for (const x of order) {
        await settle(sides, label);
        say(`${label}: round ${round}/${rounds} ${x.who}`);
        got[x.who] = await fire(x.p, x.side, x.reqs, SECONDS, conns);
      }
      row.gatehouse.push(got.gatehouse as Run);
      if (row.peer) {
        const pr = got[row.peer.kind] as Run;
        row.peer.runs.push(pr);
        row.ratios.push((got.gatehouse as Run).rps / pr.rps);
      }
    }
    for (const x of sides) {
      const rep = await x.side.report?.(x.p);
      if (rep && Object.keys(rep).length) row.reports[x.who] = rep;
    }
    const g = row.gatehouse;
    if (g.some((r) => r.errors || r.non2xx) || !g.some((r) => r.requests > 0)) failed = true;
    row.memoryAfterGc = await gh.memoryAfterGc();
    rows.push(row);
    if (SNAPSHOTS)
      await gh.heapSnapshot(join(SNAPSHOTS, `${String(i).padStart(2, '0')}-gatehouse-${gh.pid}.heapsnapshot`));
    // A process no later scenario runs on gives its connections back now: kept to the end, the
    // smoke run held about 60 PostgreSQL connections at once, enough beside a test suite on the
    // same server to exhaust max_connections (100 by default) and turn a set-up request into a 503.
    const key = processKey(s);
    if (!chosen.slice(i).some((later) => processKey(later) === key)) {
      await gh.stop();
      gatehouses.delete(key);
      await baselines.get(key)?.stop();
      baselines.delete(key);
    }
  }
} finally {
  if (process.stderr.isTTY && progress) process.stderr.write('\n');
  for (const p of [...gatehouses.values(), ...baselines.values(), ...peers.values()]) await p.stop();
  for (const c of cleanups) await c();
  await stopPg();
}

const fmt = (n: number | undefined, d = 0) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(d));
const summary = (runs: Run[]) => ({
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  errors: runs.reduce((a, r) => a + r.errors + r.non2xx, 0),
  rssMb: Math.max(...runs.map((r) => r.rssMb)),
  sql: runs[0]?.sqlPerRequest === undefined ? undefined : median(runs.map((r) => r.sqlPerRequest as number)),
  cpu: runs.every((r) => r.cpuMs)
    ? `${fmt(median(runs.map((r) => r.cpuMs?.process as number)), 2)} + ${fmt(median(runs.map((r) => r.cpuMs?.database as number)), 2)}`
    : '–',
});
const lines: string[] = [
  `\n${ROUNDS} round(s) × ${SECONDS}s, alternating, node ${process.version}, ${SMOKE ? 'smoke' : 'full'}, gatehouse from ${BUILT ? 'the built package' : 'the sources'}`,
  '',
  '| scenario | side | req/s | p50 ms | p99 ms | errors+non-2xx | RSS MB | SQL/req | CPU ms/req (process + database) | ratio |',
  '|---|---|---|---|---|---|---|---|---|---|',
];
for (const r of rows) {
  const g = summary(r.gatehouse);
  const ratio = r.ratios.length ? `**${median(r.ratios).toFixed(2)}×**` : '';
  lines.push(
    `| ${r.scenario} (c=${r.connections}) | gatehouse | ${fmt(g.rps)} | ${fmt(g.p50)} | ${fmt(g.p99)} | ${g.errors} | ${g.rssMb} | ${fmt(g.sql, 1)} | ${g.cpu} | ${ratio} |`,
  );
  if (r.peer) {
    const p = summary(r.peer.runs);
    lines.push(
      `| | ${r.peer.kind} | ${fmt(p.rps)} | ${fmt(p.p50)} | ${fmt(p.p99)} | ${p.errors} | ${p.rssMb} | ${fmt(p.sql, 1)} | ${p.cpu} | |`,
    );
  }
  for (const [who, rep] of Object.entries(r.reports)) {
    lines.push(
      `| | ${who}: ${Object.entries(rep)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')} | | | | | | | | |`,
    );
  }
}
lines.push('', 'SQL statements per request (last round; statement text → count per request):');
for (const r of rows) {
  for (const [who, runs] of [
    ['gatehouse', r.gatehouse],
    [r.peer?.kind ?? '', r.peer?.runs ?? []],
  ] as const) {
    const st = runs.at(-1)?.statements;
    if (!st || !Object.keys(st).length) continue;
    lines.push(`- ${r.scenario}, ${who}:`);
    for (const [k, v] of Object.entries(st)) lines.push(`    ${v.toFixed(2)}  ${k}`);
  }
}
lines.push('', 'Memory of each gatehouse process after the last round of a scenario, MB (in the order they ran):');
lines.push(
  '',
  '| scenario | side | RSS | heap used | heap total | new space | old space | external | array buffers | after a full GC: RSS, heap used, heap total |',
);
lines.push('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows)
  for (const [who, runs] of [
    ['gatehouse', r.gatehouse],
    [r.peer?.kind ?? '', r.peer?.runs ?? []],
  ] as const) {
    const m = runs.at(-1)?.memory;
    if (m)
      lines.push(
        `| ${r.scenario} | ${who} | ${m.rss} | ${m.heapUsed} | ${m.heapTotal} | ${m.newSpace} | ${m.oldSpace} | ${m.external} | ${m.arrayBuffers} | ${who === 'gatehouse' && r.memoryAfterGc ? `${r.memoryAfterGc.rss}, ${r.memoryAfterGc.heapUsed}, ${r.memoryAfterGc.heapTotal}` : '–'} |`,
      );
  }
process.stdout.write(`${lines.join('\n')}\n`);
writeFileSync(
  OUT,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      node: process.version,
      rounds: ROUNDS,
      seconds: SECONDS,
      smoke: SMOKE,
      gatehouseFrom: BUILT ? 'built package' : 'sources',
      // The machine's conditions: CPUs and the 1-minute load average when the run started and ended.
      cpus: availableParallelism(),
      load: [loadAtStart, loadavg()[0]].map((x) => Math.round((x as number) * 10) / 10),
      rows,
    },
    null,
    2,
  )}\n`,
);
if (failed) {
  process.stderr.write('some gatehouse scenario answered errors or non-2xx, or served nothing\n');
  process.exitCode = 1;
}
