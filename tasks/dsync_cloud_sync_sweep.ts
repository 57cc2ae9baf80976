/** Enqueues a dsync_cloud_sync job per Google directory that is due (all of them when `force`). */
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';
import { cloudSyncSweepPayload } from '../src/dsync/cloud/google/schemas.ts';

export default defineTask(cloudSyncSweepPayload, async (c: Container, p) => {
  await c.dsync.services.google.sweep({ force: p.force === true });
});
