/** Real-time webhook delivery of directory-sync events: a directory's sender (src/dsync/events/delivery.ts). */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { audit } from '../src/core/audit/events.ts';
import { defineTask } from '../src/core/jobs/task.ts';
import { metrics } from '../src/core/observability/metrics.ts';

// `eventId` was set by versions that enqueued a job per event; such jobs still run as senders.
const payload = z.object({ directoryId: z.string().uuid(), eventId: z.string().uuid().optional() });

export default defineTask(payload, async (c: Container, p, helpers) => {
  const { attempts, max_attempts: max } = helpers.job;
  if (attempts > 1) metrics.webhookRetries.inc();
  try {
    await c.dsync.services.delivery.deliver(p, { id: Number(helpers.job.id), attempt: attempts });
  } catch (e) {
    if (attempts >= max) {
      metrics.webhookFailedPermanently.inc();
      await audit(c.db, {
        type: 'dsync.webhook.failed_permanently',
        actor: { kind: 'system' },
        target: { kind: 'directory', id: p.directoryId },
        outcome: 'failure',
        details: { job: String(helpers.job.id), attempts, event: p.eventId },
      }).catch(() => {});
    }
    throw e;
  }
});
