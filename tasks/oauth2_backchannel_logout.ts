/** One back-channel logout notification (enqueued with the session deletion); retried with backoff. */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { OAuth2TaskContext } from '../src/oauth2/task-context.ts';
import { oauth2Tasks } from '../src/oauth2/tasks.ts';

export default taskFrom(oauth2Tasks, 'oauth2_backchannel_logout', (c: OAuth2TaskContext, p, helpers) =>
  c.oauth2.flows.channels.deliver(p, helpers.job.attempts),
);
