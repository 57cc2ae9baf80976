/** One back-channel logout notification (enqueued with the session deletion); retried with backoff. */
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';
import { backchannelPayload } from '../src/oauth2/logout/channels.ts';

export default defineTask<Container, typeof backchannelPayload>(backchannelPayload, (c, p, helpers) =>
  c.oauth2.flows.channels.deliver(p, helpers.job.attempts),
);
