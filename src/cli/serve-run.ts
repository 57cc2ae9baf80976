/** `gatehouse serve`: what it runs (loaded by the command's action; the definition is in serve.ts). */
import { createContainer } from '../container.ts';
import { assertServable, migrationStatus, SQL_DIR } from '../core/db/migrate.ts';
import { openQueuePool } from '../core/jobs/pooler.ts';
import { startQueueRelay } from '../core/jobs/relay.ts';
import { loadTaskList, startWorker } from '../core/jobs/runner.ts';
import { startTracing } from '../core/observability/tracing.ts';
import { serve } from '../server.ts';
import { workerLanes } from '../task-registry.ts';
import { VERSION } from '../version.ts';
import { type GlobalFlags, onShutdown } from './common.ts';
import { configFrom } from './config.ts';

export async function serveCommand(which: 'all' | 'public' | 'admin', flags: GlobalFlags): Promise<void> {
  const config = configFrom(flags);
  if (which !== 'all' && config.dsn === 'memory') {
    throw new Error(
      `serve ${which} cannot use dsn=memory: the embedded database lives in one process; use serve all or a postgres:// DSN`,
    );
  }
  const tracing = await startTracing(config.tracing, { version: VERSION });
  const c = await createContainer({ config, checkDialect: true });
  let states: Awaited<ReturnType<typeof migrationStatus>>;
  try {
    states = await migrationStatus(c.pool, flags.migrationsDir ?? SQL_DIR);
    // Pending migrations that create indexes (or are marked required-by-code) stop the start.
    assertServable(states);
  } catch (e) {
    await c.close();
    throw e;
  }
  const pending = states.filter((m) => m.status !== 'applied');
  if (pending.length) {
    c.log.warn(
      { pending: pending.map((m) => m.file) },
      'migrations are pending: run gatehouse migrate sql; /health/ready answers 503 until then',
    );
  }
  const s = await serve(c, which);
  const inProcess =
    c.config.worker.in_process === 'on' || (c.config.worker.in_process === 'auto' && c.dsn.kind === 'memory');
  const queue = which === 'all' && inProcess ? await openQueuePool(c) : undefined;
  const runner = queue
    ? await startWorker({
        pool: queue.pool,
        log: c.log,
        concurrency: c.config.worker.concurrency,
        lanes: workerLanes(c.config),
        pollInterval: c.config.worker.poll_interval,
        livenessIntervalMs: c.config.worker.liveness_check_interval,
        crontabFile: c.config.worker.crontab,
        taskList: await loadTaskList(c),
      })
    : undefined;
  const relay = queue?.separate ? startQueueRelay(c, queue.url) : undefined;
  // Signal handlers first: a supervisor may stop the process as soon as it reports that it serves.
  onShutdown(async () => {
    c.log.info('shutting down: no new connections, finishing in-flight requests');
    await s.close();
    await relay?.stop();
    await runner?.stop();
    await queue?.close();
    await c.close();
    // An unreachable collector loses the last spans; that is no reason for a failed exit.
    await tracing
      ?.shutdown()
      .catch((e) => c.log.warn({ err: e }, 'tracing: the last spans could not be exported at shutdown'));
  });
  // SIGHUP re-reads the TLS certificates and keys (after a renewal); a bad pair keeps the old one.
  process.on('SIGHUP', () => {
    const results = s.reloadTls();
    if (!results.length) c.log.info('SIGHUP: no listener uses TLS; nothing to reload');
    for (const r of results) {
      if (r.ok) c.log.info({ listener: r.listener }, 'TLS certificate reloaded');
      else c.log.error({ listener: r.listener }, `TLS certificate not reloaded, the previous one stays: ${r.message}`);
    }
  });
  const worker = runner ? 'in-process' : 'separate (run gatehouse worker)';
  const database =
    c.dsn.kind === 'memory' ? `memory (embedded PostgreSQL in ${c.config.db.memory.dir})` : describeDsn(c.config.dsn);
  c.log.info(
    { public: s.public?.port, admin: s.admin?.port, worker: runner ? 'in-process' : 'separate', database: c.dsn.kind },
    'gatehouse is serving',
  );
  // Once, for the person who started it: where it listens, which database, where jobs run.
  process.stderr.write(
    [
      ...(s.public ? [`gatehouse: public API on ${s.public.url}`] : []),
      ...(s.admin ? [`gatehouse: admin API on ${s.admin.url}`] : []),
      `gatehouse: database ${database}`,
      `gatehouse: worker ${worker}`,
    ].join('\n') + '\n',
  );
}

/** `postgres://host:port/db` without user, password or query (which may hold credentials). */
export function describeDsn(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unparseable dsn)';
  }
}
