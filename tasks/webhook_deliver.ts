/** Real-time webhook delivery of directory-sync events: a directory's sender (src/dsync/events/delivery.ts). */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';

// `eventId` was set by versions that enqueued a job per event; such jobs still run as senders.
const payload = z.object({ directoryId: z.string().uuid(), eventId: z.string().uuid().optional() });

export default defineTask(payload, async (c: Container, p, helpers) => {
  await c.dsync.services.delivery.deliver(p, { id: Number(helpers.job.id), attempt: helpers.job.attempts });
});
