/**
 * Crontab, every minute: checks each directory's real-time sender against the job queue (a job
 * removed by hand gets a replacement, one that died out of attempts is marked failed), and
 * schedules a batch processing run when queued events have none (the interval timer or a backoff
 * retry). Normally a no-op.
 */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(dsyncTasks, 'dsync_webhook_maintenance', async (c: Pick<DsyncTaskContext, 'dsync'>) => {
  await c.dsync.services.delivery.repairOrphans();
  await c.dsync.services.batch.ensureScheduled();
});
