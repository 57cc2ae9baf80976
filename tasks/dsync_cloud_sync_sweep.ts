/** Enqueues a dsync_cloud_sync job per Google directory that is due (all of them when `force`). */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(dsyncTasks, 'dsync_cloud_sync_sweep', async (c: Pick<DsyncTaskContext, 'dsync'>, p) => {
  await c.dsync.services.google.sweep({ force: p.force === true });
});
