/**
 * One gatehouse for the benchmark, in a process of its own (`serve all` with its worker, as an
 * operator runs it), on a fresh database. Started by the runner with an IPC channel and the config
 * overrides in BENCH_OVERRIDES (JSON). Messages: it sends `{ type: 'ready', publicUrl, adminUrl, dsn }`;
 * it answers `{ type: 'stats' }` with its RSS, where its memory is (`memory`) and the number of SQL
 * statements sent so far (every `pg` client query, the worker's included), `{ type: 'heap-snapshot' }`
 * by writing one, and `{ type: 'stop' }` by closing and dropping the database. From the built
 * package, the runner starts it as JavaScript (proc.ts, benchMain).
 */
import { randomBytes } from 'node:crypto';
import { getHeapSpaceStatistics, setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pg from 'pg';

// BENCH_BUILT=1: the compiled package (`npm run build`, what `gatehouse serve all` runs), else the sources.
const built = process.env.BENCH_BUILT === '1';
const load = <T>(module: string): Promise<T> =>
  import(built ? `../../dist/src/${module}.js` : `../../src/${module}.ts`) as Promise<T>;
const { createContainer } = await load<typeof import('../../src/container.ts')>('container');
const { loadConfig } = await load<typeof import('../../src/config.ts')>('config');
const { loadTaskList, startWorker } = await load<typeof import('../../src/core/jobs/runner.ts')>('core/jobs/runner');
const { createLogger } = await load<typeof import('../../src/core/log.ts')>('core/log');
const { serve } = await load<typeof import('../../src/server.ts')>('server');
const { workerLanes } = await load<typeof import('../../src/task-registry.ts')>('task-registry');

let queries = 0;
/** Statement text (whitespace collapsed, first 160 characters) → times sent. */
const statements = new Map<string, number>();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  queries++;
  const q = args[0] as string | { text?: string } | undefined;
  const text = (typeof q === 'string' ? q : (q?.text ?? '?')).replace(/\s+/g, ' ').trim().slice(0, 160);
  statements.set(text, (statements.get(text) ?? 0) + 1);
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

export const BENCH_API_KEY = 'bench-api-key';

const base = process.env.BENCH_DATABASE_URL as string;
const name = `gh_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const u = new URL(base);
u.pathname = `/${name}`;
const config = loadConfig({
  env: {},
  overrides: {
    dsn: u.toString(),
    // Plain-http loopback URLs (the issuer, redirect URIs) need dev mode; nothing on the measured paths reads it.
    dev: true,
    'secrets.system': ['bench-system-secret-0123456789'],
    'serve.public.port': 0,
    'serve.admin.port': 0,
    'serve.public.host': '127.0.0.1',
    'serve.admin.host': '127.0.0.1',
    'dsync.api_keys': [BENCH_API_KEY],
    // BENCH_WORKER_CONCURRENCY: the worker's job slots (the worker runs in this process).
    ...(process.env.BENCH_WORKER_CONCURRENCY
      ? { 'worker.concurrency': Number(process.env.BENCH_WORKER_CONCURRENCY) }
      : {}),
    ...JSON.parse(process.env.BENCH_OVERRIDES ?? '{}'),
  },
});
const container = await createContainer({
  config,
  log: createLogger({ level: 'silent' }),
  databaseUrl: u.toString(),
  autoMigrate: true,
});
const s = await serve(container, 'all');
const runner = await startWorker({
  pool: container.pool,
  log: container.log,
  concurrency: config.worker.concurrency,
  lanes: workerLanes(config),
  pollInterval: config.worker.poll_interval,
  livenessIntervalMs: config.worker.liveness_check_interval,
  taskList: await loadTaskList(container),
});

setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;

/** Where the memory is, MB: V8's heap (used, and reserved by space), memory outside it, the resident set. */
function memory(): Record<string, number> {
  const mb = (n: number) => Math.round((n / 1048576) * 10) / 10;
  const u = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((x) => [x.space_name, x.space_size]));
  return {
    rss: mb(u.rss),
    heapUsed: mb(u.heapUsed),
    heapTotal: mb(u.heapTotal),
    newSpace: mb(spaces.new_space ?? 0),
    oldSpace: mb((spaces.old_space ?? 0) + (spaces.code_space ?? 0) + (spaces.large_object_space ?? 0)),
    external: mb(u.external),
    arrayBuffers: mb(u.arrayBuffers),
  };
}

process.send?.({ type: 'ready', publicUrl: s.public?.url, adminUrl: s.admin?.url, dsn: u.toString() });
process.on('message', async (m: { type?: string }) => {
  if (m?.type === 'stats')
    process.send?.({
      type: 'stats',
      rss: process.memoryUsage().rss,
      memory: memory(),
      queries,
      statements: Object.fromEntries(statements),
    });
  // BENCH_HEAP_SNAPSHOTS (see run.ts): a heap snapshot into the folder given, for diagnosis only (writing
  // one makes the process's RSS grow by about the heap's size).
  // The memory a full collection leaves: the RSS after the last round mostly says when V8's last
  // major collection ran. Asked between scenarios, never during a measured round.
  if (m?.type === 'memory-after-gc') {
    fullGc();
    process.send?.({ type: 'memory-after-gc', memory: memory() });
  }
  if (m?.type === 'heap-snapshot')
    process.send?.({ type: 'heap-snapshot', file: writeHeapSnapshot((m as { file?: string }).file) });
  if (m?.type === 'stop') {
    setTimeout(() => process.exit(0), 10_000).unref();
    await s.close(1000);
    await runner.stop();
    await container.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    process.exit(0);
  }
});
