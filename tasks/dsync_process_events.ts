/**
 * Batch mode: one processing run over the queued events, then the next run is scheduled
 * (src/dsync/events/batch.ts). Enqueued by `/api/v1/dsync/cron/process-events`, by the interval
 * timer (`dsync.webhook_batch_cron_interval`) and after failures (backoff).
 */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(dsyncTasks, 'dsync_process_events', async (c: Pick<DsyncTaskContext, 'dsync' | 'log'>, p) => {
  const r = await c.dsync.services.batch.run();
  if (r.posts || r.dropped) c.log.info({ trigger: p.trigger, ...r }, 'webhook batches processed');
});
