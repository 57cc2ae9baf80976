/** Child processes of the benchmark (gatehouse and the peers), each with an IPC channel for stats. */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join } from 'node:path';

export interface Stats {
  rss: number;
  /** SQL statements sent so far (every `pg` client query). */
  queries: number;
  /** The same by statement text. */
  statements: Record<string, number>;
  /** gatehouse: where its memory is, MB (rss, heapUsed, heapTotal, newSpace, oldSpace, external, arrayBuffers). */
  memory?: Record<string, number>;
}

export interface Proc {
  kind: 'gatehouse' | 'oidc-provider' | 'jackson';
  /** gatehouse: public listener; peers: their only listener. */
  url: string;
  adminUrl: string;
  /** gatehouse: its database. */
  dsn: string;
  pid: number;
  stats(): Promise<Stats>;
  /** gatehouse: writes a V8 heap snapshot to `file` (BENCH_HEAP_SNAPSHOTS) and resolves when it is written. */
  heapSnapshot(file: string): Promise<void>;
  /** gatehouse of this checkout: its memory (as in `Stats`) after a full garbage collection. */
  memoryAfterGc(): Promise<Record<string, number> | undefined>;
  stop(): Promise<void>;
}

const BENCH = import.meta.dirname;
const PEERS = join(BENCH, 'peers');

/**
 * The Node flags `gatehouse serve` of the tree at `root` runs with (its bin/gatehouse.mjs adds them:
 * `NODE_FLAGS`, or the older `SEMI_SPACE_MB`), or BENCH_NODE_FLAGS (space-separated; empty for none)
 * to compare. A baseline (BENCH_BASELINE) runs with its own bin's flags.
 */
function gatehouseFlags(root: string): string[] {
  const own = process.env.BENCH_NODE_FLAGS;
  if (own !== undefined) return own.split(' ').filter(Boolean);
  const bin = readFileSync(join(root, 'bin/gatehouse.mjs'), 'utf8');
  const list = /const NODE_FLAGS = \[([^\]]*)\]/.exec(bin)?.[1];
  if (list !== undefined) return [...list.matchAll(/'([^']+)'/g)].map((m) => m[1] as string);
  const mb = /const SEMI_SPACE_MB = (\d+);/.exec(bin)?.[1];
  if (!mb) throw new Error(`${root}/bin/gatehouse.mjs: neither NODE_FLAGS nor SEMI_SPACE_MB found`);
  return [`--max-semi-space-size=${mb}`];
}

/**
 * The script a gatehouse process of the tree at `root` runs: its test/bench/gatehouse-main.ts, or,
 * from the built package (BENCH_BUILT=1), the same with its types stripped into
 * dist/bench/gatehouse-main.mjs (where its `../../dist/src` imports still resolve). A `.ts` entry
 * makes Node load its type stripper, a WebAssembly module that kept about 18 MB of RSS in the
 * process: memory `gatehouse serve` from the package never has, measured as if it were gatehouse's.
 */
function benchMain(root: string): string {
  const ts = join(root, 'test/bench/gatehouse-main.ts');
  if (process.env.BENCH_BUILT !== '1') return ts;
  const js = join(root, 'dist/bench/gatehouse-main.mjs');
  mkdirSync(dirname(js), { recursive: true });
  writeFileSync(js, stripTypeScriptTypes(readFileSync(ts, 'utf8')));
  return js;
}

/** BENCH_STDOUT_DIR: each gatehouse process's stdout into a file there (with BENCH_NODE_FLAGS='… --trace-gc'). */
let stdoutFiles = 0;
const gatehouseStdout = () => {
  const dir = process.env.BENCH_STDOUT_DIR;
  if (!dir) return 'ignore';
  mkdirSync(dir, { recursive: true });
  return openSync(join(dir, `gatehouse-${process.pid}-${++stdoutFiles}.out`), 'w');
};

async function start(
  kind: Proc['kind'],
  script: string,
  env: Record<string, string>,
  root = join(BENCH, '../..'),
): Promise<Proc> {
  // BENCH_CPU_PROF=<dir>: each process writes a V8 CPU profile there when it stops (see docs/performance.md).
  const prof = process.env.BENCH_CPU_PROF;
  const child: ChildProcess = fork(script, [], {
    execArgv: [
      ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : []),
      ...(kind === 'gatehouse' ? gatehouseFlags(root) : []),
    ],
    env: { ...process.env, NODE_ENV: 'production', ...env },
    stdio: ['ignore', kind === 'gatehouse' ? gatehouseStdout() : 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  const ready = await new Promise<Record<string, string>>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${kind} exited (${code}) before it was ready:\n${stderr}`)));
    child.on('message', (m: Record<string, string>) => {
      if (m.type === 'ready') resolve(m);
    });
  });
  child.removeAllListeners('exit');
  /** Sends `message` to the process and resolves with its reply, the next message of the same type. */
  const ask = <T>(message: { type: string; [k: string]: unknown }) =>
    new Promise<T>((resolve) => {
      const on = (m: T & { type: string }) => {
        if (m.type !== message.type) return;
        child.off('message', on);
        resolve(m);
      };
      child.on('message', on);
      child.send(message);
    });
  return {
    kind,
    url: ready.publicUrl ?? ready.url ?? '',
    adminUrl: ready.adminUrl ?? ready.url ?? '',
    dsn: ready.dsn ?? env.PEER_DATABASE_URL ?? '',
    pid: child.pid ?? 0,
    stats: async () => {
      const m = await ask<Stats>({ type: 'stats' });
      return {
        rss: m.rss,
        queries: m.queries,
        statements: m.statements ?? {},
        ...(m.memory ? { memory: m.memory } : {}),
      };
    },
    heapSnapshot: async (file) => {
      await ask({ type: 'heap-snapshot', file });
    },
    memoryAfterGc: async () => (await ask<{ memory?: Record<string, number> }>({ type: 'memory-after-gc' })).memory,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.send({ type: 'stop' });
        setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
      }),
  };
}

/** A gatehouse of this checkout, or of another tree (`root`: the baseline of BENCH_BASELINE) run by its own bench main. */
export function startGatehouse(
  databaseUrl: string,
  overrides: Record<string, unknown>,
  root = join(BENCH, '../..'),
): Promise<Proc> {
  return start(
    'gatehouse',
    benchMain(root),
    { BENCH_DATABASE_URL: databaseUrl, BENCH_OVERRIDES: JSON.stringify(overrides) },
    root,
  );
}

/** Installs the peers (pinned in test/bench/peers/package.json) into test/bench/peers/node_modules once. */
export function ensurePeers(): void {
  const pkg = JSON.parse(readFileSync(join(PEERS, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const missing = Object.entries(pkg.dependencies).filter(([name, version]) => {
    const f = join(PEERS, 'node_modules', name, 'package.json');
    return !existsSync(f) || (JSON.parse(readFileSync(f, 'utf8')) as { version: string }).version !== version;
  });
  if (!missing.length) return;
  process.stderr.write(`installing bench peers into ${PEERS} (${missing.map(([n, v]) => `${n}@${v}`).join(', ')})…\n`);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: PEERS,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

export async function startPeer(kind: 'oidc-provider' | 'jackson', databaseUrl: string): Promise<Proc> {
  ensurePeers();
  let env: Record<string, string> = {};
  if (kind === 'jackson') {
    const pg = (await import('pg')).default;
    const name = `jackson_bench_${process.pid}`;
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const u = new URL(databaseUrl);
    u.pathname = `/${name}`;
    env = { PEER_DATABASE_URL: u.toString() };
    const p = await start(kind, join(PEERS, 'jackson.mjs'), env);
    const stop = p.stop;
    p.stop = async () => {
      await stop();
      const d = new pg.Client({ connectionString: databaseUrl });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await d.end();
    };
    return p;
  }
  return start(kind, join(PEERS, 'oidc-provider.mjs'), env);
}
