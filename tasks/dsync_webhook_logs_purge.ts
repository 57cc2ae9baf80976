/**
 * Crontab, hourly: deletes webhook logs older than `dsync.webhook_logs_ttl` in bounded batches;
 * when a run stops on its bound it enqueues itself again.
 */
import { withTx } from '../src/core/db/tx.ts';
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(
  dsyncTasks,
  'dsync_webhook_logs_purge',
  async (c: Pick<DsyncTaskContext, 'dsync' | 'db' | 'log' | 'jobs'>) => {
    const r = await c.dsync.services.webhookLogs.purge();
    if (r.deleted) c.log.info({ deleted: r.deleted, more: r.more }, 'webhook logs purged');
    if (r.more) {
      await withTx(c.db, (trx) =>
        c.jobs.add(trx, 'dsync_webhook_logs_purge', {}, { maxAttempts: 3, jobKey: 'dsync:webhook-logs-purge' }),
      );
    }
  },
);
