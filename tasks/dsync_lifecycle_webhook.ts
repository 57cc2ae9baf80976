/** Connection lifecycle events to the global webhook (src/dsync/events/lifecycle.ts). */
import { z } from 'zod';
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';

const payload = z.object({ event: z.record(z.string(), z.unknown()) });

export default defineTask(payload, async (c: Container, p) => {
  await c.dsync.services.lifecycle.deliver(p.event);
});
