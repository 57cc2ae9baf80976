/** Real-time webhook delivery of directory-sync events (src/dsync/events/delivery.ts). */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';

const payload = z.object({ directoryId: z.string().uuid(), eventId: z.string().uuid() });

export default defineTask(payload, async (c: Container, p, helpers) => {
  await c.dsync.services.delivery.deliver(p, { id: Number(helpers.job.id), attempt: helpers.job.attempts });
});
