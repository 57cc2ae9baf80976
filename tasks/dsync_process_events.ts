/**
 * Batch mode: one processing run over the queued events, then the next run is scheduled
 * (src/dsync/events/batch.ts). Enqueued by `/api/v1/dsync/cron/process-events`, by the interval
 * timer (`dsync.webhook_batch_cron_interval`) and after failures (backoff).
 */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';

const payload = z.object({ trigger: z.string().optional() }).passthrough();

export default defineTask(payload, async (c: Container, p) => {
  const r = await c.dsync.services.batch.run();
  if (r.posts || r.dropped) c.log.info({ trigger: p.trigger, ...r }, 'webhook batches processed');
});
