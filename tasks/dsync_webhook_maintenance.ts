/**
 * Crontab, every minute: gives a delivery job to undelivered real-time events that lost theirs
 * (a job removed by hand), and schedules a batch processing run when queued events have none
 * (the interval timer or a backoff retry). Normally a no-op.
 */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';

export default defineTask(z.object({}).passthrough(), async (c: Container) => {
  await c.dsync.services.delivery.repairOrphans();
  await c.dsync.services.batch.ensureScheduled();
});
