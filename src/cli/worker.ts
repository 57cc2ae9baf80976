import type { Command } from 'commander';
import { createContainer } from '../container.ts';
import { openQueuePool } from '../core/jobs/pooler.ts';
import { loadTaskList, startWorker } from '../core/jobs/runner.ts';
import { configFrom, type GlobalFlags, onShutdown, run } from './common.ts';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('Run the graphile-worker job runner over tasks/ and crontab')
    .option('-j, --concurrency <n>', 'jobs run at once (default worker.concurrency)')
    .action((o: { concurrency?: string }) =>
      run(async () => {
        const config = configFrom(program.opts<GlobalFlags>());
        if (config.dsn === 'memory')
          throw new Error('worker cannot use dsn=memory: serve all runs a worker in-process instead');
        const c = await createContainer({ config, checkDialect: true });
        let queue: Awaited<ReturnType<typeof openQueuePool>>;
        try {
          queue = await openQueuePool(c);
        } catch (e) {
          await c.close();
          throw e;
        }
        const runner = await startWorker({
          pool: queue.pool,
          log: c.log,
          concurrency: o.concurrency ? Number(o.concurrency) : c.config.worker.concurrency,
          pollInterval: c.config.worker.poll_interval,
          livenessIntervalMs: c.config.worker.liveness_check_interval,
          crontabFile: c.config.worker.crontab,
          taskList: await loadTaskList(c),
        });
        // Signal handlers first: a supervisor may stop the worker as soon as it reports that it started.
        onShutdown(async () => {
          await runner.stop();
          await queue.close();
          await c.close();
        });
        c.log.info('worker started');
      }),
    );
}
