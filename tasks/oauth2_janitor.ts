/** Daily (crontab) clean-up of expired rows in bounded batches; re-enqueues itself while rows remain. */
import type { Container } from '../src/container.ts';
import { defineTask } from '../src/core/jobs/task.ts';
import { janitorPayload } from '../src/oauth2/janitor/service.ts';

export default defineTask<Container, typeof janitorPayload>(janitorPayload, async (c, p) => {
  await c.oauth2.janitor.runTask(p.targets);
});
