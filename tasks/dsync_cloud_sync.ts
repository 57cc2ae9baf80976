/** One Google Workspace sync of one directory (enqueued by dsync_cloud_sync_sweep, one job per directory). */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(dsyncTasks, 'dsync_cloud_sync', async (c: Pick<DsyncTaskContext, 'dsync'>, p) => {
  await c.dsync.services.google.syncDirectory(p.directoryId);
});
