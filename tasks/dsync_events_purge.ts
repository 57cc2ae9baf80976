/**
 * Crontab, hourly: deletes directory-sync events older than `dsync.events.retention` in bounded
 * batches (see src/dsync/events/feed.ts purge); when a run stops on its bound it enqueues itself
 * again. Webhook logs have their own purge (`dsync_webhook_logs_purge`).
 */
import { withTx } from '../src/core/db/tx.ts';
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(
  dsyncTasks,
  'dsync_events_purge',
  async (c: Pick<DsyncTaskContext, 'dsync' | 'db' | 'log' | 'jobs'>) => {
    const r = await c.dsync.services.feed.purge();
    if (r.deleted) c.log.info({ deleted: r.deleted, more: r.more }, 'directory-sync events purged');
    if (r.more) {
      await withTx(c.db, (trx) =>
        c.jobs.add(trx, 'dsync_events_purge', {}, { maxAttempts: 3, jobKey: 'dsync:events-purge' }),
      );
    }
  },
);
