/** Child processes of the benchmark (gatehouse and the peers), each with an IPC channel for stats. */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Stats {
  rss: number;
  /** SQL statements sent so far (every `pg` client query). */
  queries: number;
  /** The same by statement text. */
  statements: Record<string, number>;
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
  stop(): Promise<void>;
}

const BENCH = import.meta.dirname;
const PEERS = join(BENCH, 'peers');

/**
 * The Node flags `gatehouse serve` runs with (bin/gatehouse.mjs adds its young-generation cap), or
 * BENCH_NODE_FLAGS (space-separated; empty for none) to compare.
 */
function gatehouseFlags(): string[] {
  const own = process.env.BENCH_NODE_FLAGS;
  if (own !== undefined) return own.split(' ').filter(Boolean);
  const mb = /const SEMI_SPACE_MB = (\d+);/.exec(readFileSync(join(BENCH, '../../bin/gatehouse.mjs'), 'utf8'))?.[1];
  if (!mb) throw new Error('bin/gatehouse.mjs: SEMI_SPACE_MB not found');
  return [`--max-semi-space-size=${mb}`];
}

async function start(kind: Proc['kind'], script: string, env: Record<string, string>): Promise<Proc> {
  // BENCH_CPU_PROF=<dir>: each process writes a V8 CPU profile there when it stops (see docs/performance.md).
  const prof = process.env.BENCH_CPU_PROF;
  const child: ChildProcess = fork(script, [], {
    execArgv: [
      ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : []),
      ...(kind === 'gatehouse' ? gatehouseFlags() : []),
    ],
    env: { ...process.env, NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
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
  return {
    kind,
    url: ready.publicUrl ?? ready.url ?? '',
    adminUrl: ready.adminUrl ?? ready.url ?? '',
    dsn: ready.dsn ?? env.PEER_DATABASE_URL ?? '',
    pid: child.pid ?? 0,
    stats: () =>
      new Promise((resolve) => {
        const on = (m: Stats & { type: string }) => {
          if (m.type !== 'stats') return;
          child.off('message', on);
          resolve({ rss: m.rss, queries: m.queries, statements: m.statements ?? {} });
        };
        child.on('message', on);
        child.send({ type: 'stats' });
      }),
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
export function startGatehouse(databaseUrl: string, overrides: Record<string, unknown>, root?: string): Promise<Proc> {
  return start('gatehouse', root ? join(root, 'test/bench/gatehouse-main.ts') : join(BENCH, 'gatehouse-main.ts'), {
    BENCH_DATABASE_URL: databaseUrl,
    BENCH_OVERRIDES: JSON.stringify(overrides),
  });
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
