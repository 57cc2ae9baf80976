import type { Command } from 'commander';
import { type GlobalFlags, run } from './common.ts';

interface JobFlags {
  task?: string;
  id?: string[];
  queue?: string;
  json?: boolean;
  all?: boolean;
}

const filterOf = (o: JobFlags) => ({
  ...(o.task ? { task: o.task } : {}),
  ...(o.queue ? { queue: o.queue } : {}),
  ...(o.id?.length ? { ids: o.id.map(Number) } : {}),
});

/** The application and the job admin queries, loaded when a command runs. */
async function open(program: Command) {
  const [{ configFrom }, { createContainer }, admin] = await Promise.all([
    import('./config.ts'),
    import('../container.ts'),
    import('../core/jobs/admin.ts'),
  ]);
  const c = await createContainer({ config: configFrom(program.opts<GlobalFlags>()), autoMigrate: false });
  return { c, admin };
}

export function registerJobs(program: Command): void {
  const j = program.command('jobs').description('Inspect and retry background jobs');
  j.command('failed')
    .description('List jobs that ran out of attempts')
    .option('--task <identifier>', 'only this task (e.g. webhook_deliver)')
    .option('--queue <name>', 'only this queue')
    .option('--json', 'print JSON')
    .action((o: JobFlags) =>
      run(async () => {
        const { c, admin } = await open(program);
        try {
          const jobs = await admin.listFailedJobs(c.queue.db, filterOf(o), 1000);
          if (o.json) process.stdout.write(`${JSON.stringify(jobs, null, 2)}\n`);
          else if (!jobs.length) process.stdout.write('no failed jobs\n');
          else {
            for (const x of jobs) {
              process.stdout.write(
                `${String(x.id).padEnd(8)} ${x.task.padEnd(24)} ${x.attempts}/${x.maxAttempts}  ${(x.lastError ?? '').split('\n')[0]}\n`,
              );
            }
          }
        } finally {
          await c.close();
        }
      }),
    );
  j.command('outbox')
    .description('With queue.dsn: jobs waiting in the data database for the relay, and the age of the oldest')
    .option('--json', 'print JSON')
    .action((o: JobFlags) =>
      run(async () => {
        const { c } = await open(program);
        try {
          if (c.queue.mode !== 'outbox') {
            process.stdout.write('queue.dsn is not set: jobs are added to the queue directly (no outbox)\n');
            return;
          }
          const { outboxBacklog } = await import('../core/jobs/relay.ts');
          const b = await outboxBacklog(c.pool);
          if (o.json) process.stdout.write(`${JSON.stringify(b)}\n`);
          else process.stdout.write(`${b.jobs} job(s) waiting for the relay; oldest ${b.oldestSeconds.toFixed(1)} s\n`);
        } finally {
          await c.close();
        }
      }),
    );
  j.command('retry')
    .description('Re-enqueue failed jobs now with a fresh attempt budget')
    .option('--task <identifier>', 'only this task (e.g. webhook_deliver)')
    .option('--queue <name>', 'only this queue')
    .option('--id <id...>', 'only these job ids')
    .option('--all', 'every failed job')
    .action((o: JobFlags) =>
      run(async () => {
        if (!o.task && !o.id?.length && !o.queue && !o.all)
          throw new Error('jobs retry: name --task, --queue, --id or --all');
        const { c, admin } = await open(program);
        try {
          const ids = await admin.retryFailedJobs(c.queue.db, filterOf(o));
          process.stdout.write(
            ids.length ? `re-enqueued ${ids.length} job(s): ${ids.join(', ')}\n` : 'no failed jobs matched\n',
          );
        } finally {
          await c.close();
        }
      }),
    );
}
