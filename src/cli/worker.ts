import type { Command } from 'commander';
import { VERSION } from '../version.ts';
import { type GlobalFlags, onShutdown, run } from './common.ts';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('Run the graphile-worker job runner over tasks/ and crontab')
    .option(
      '-j, --concurrency <n>',
      'jobs run at once (default worker.concurrency), besides the webhook senders (dsync.webhook.concurrency)',
    )
    .action((o: { concurrency?: string }) =>
      run(async () => {
        const [
          { configFrom },
          { createContainer },
          { openQueuePool },
          { loadTaskList, startWorker },
          { startQueueRelay },
          { metricsServer },
          { startTracing },
          { workerLanes },
        ] = await Promise.all([
          import('./config.ts'),
          import('../container.ts'),
          import('../core/jobs/pooler.ts'),
          import('../core/jobs/runner.ts'),
          import('../core/jobs/relay.ts'),
          import('../core/observability/metrics.ts'),
          import('../core/observability/tracing.ts'),
          import('../task-registry.ts'),
        ]);
        const config = configFrom(program.opts<GlobalFlags>());
        if (config.dsn === 'memory')
          throw new Error('worker cannot use dsn=memory: serve all runs a worker in-process instead');
        const tracing = await startTracing(config.tracing, { version: VERSION });
        const concurrency = o.concurrency ? Number(o.concurrency) : config.worker.concurrency;
        if (!Number.isInteger(concurrency) || concurrency < 1)
          throw new Error(`--concurrency: expected a whole number of job slots, 1 or more (got ${o.concurrency})`);
        const c = await createContainer({ config, checkDialect: true });
        let queue: Awaited<ReturnType<typeof openQueuePool>>;
        try {
          queue = await openQueuePool(c);
        } catch (e) {
          await c.close();
          throw e;
        }
        let metrics: Awaited<ReturnType<typeof metricsServer>> | undefined;
        let runner: Awaited<ReturnType<typeof startWorker>> | undefined;
        let relay: ReturnType<typeof startQueueRelay> | undefined;
        const starting = (async () => {
          // Off by default: a worker has no HTTP listener unless worker.metrics.port is set.
          metrics = config.worker.metrics.port
            ? await metricsServer(config.worker.metrics.port, config.worker.metrics.host)
            : undefined;
          if (metrics) c.log.info({ port: metrics.port }, 'worker metrics at /metrics/prometheus');
          runner = await startWorker({
            pool: queue.pool,
            log: c.log,
            concurrency,
            lanes: workerLanes(c.config),
            pollInterval: c.config.worker.poll_interval,
            livenessIntervalMs: c.config.worker.liveness_check_interval,
            crontabFile: c.config.worker.crontab,
            taskList: await loadTaskList(c),
          });
          // A separate queue database: this worker's relay competes for the fleet's one relay lock.
          if (queue.separate) relay = startQueueRelay(c, queue.url);
        })();
        // Signal handlers before anything is reported (the metrics line, "worker started"): a
        // supervisor may stop the worker at once; a stop during the start waits for it to finish.
        onShutdown(async () => {
          await starting.catch(() => {});
          await relay?.stop();
          await runner?.stop();
          await queue.close();
          await metrics?.close();
          await c.close();
          // An unreachable collector loses the last spans; that is no reason for a failed exit.
          await tracing
            ?.shutdown()
            .catch((e) => c.log.warn({ err: e }, 'tracing: the last spans could not be exported at shutdown'));
        });
        await starting;
        c.log.info('worker started');
      }),
    );
}
