/** One Google Workspace sync of one directory (enqueued by dsync_cloud_sync_sweep, one job per directory). */
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';
import { cloudSyncPayload } from '../src/dsync/cloud/google/schemas.ts';

export default defineTask(cloudSyncPayload, async (c: Container, p) => {
  await c.dsync.services.google.syncDirectory(p.directoryId);
});
