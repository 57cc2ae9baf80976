/** Connection lifecycle events to the global webhook (src/dsync/events/lifecycle.ts). */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { DsyncTaskContext } from '../src/dsync/task-context.ts';
import { dsyncTasks } from '../src/dsync/tasks.ts';

export default taskFrom(dsyncTasks, 'dsync_lifecycle_webhook', async (c: Pick<DsyncTaskContext, 'dsync'>, p) => {
  await c.dsync.services.lifecycle.deliver(p.event);
});
