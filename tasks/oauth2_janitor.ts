/** Daily (crontab) clean-up of expired rows in bounded batches; re-enqueues itself while rows remain. */
import { taskFrom } from '../src/core/jobs/registry.ts';
import type { OAuth2TaskContext } from '../src/oauth2/task-context.ts';
import { oauth2Tasks } from '../src/oauth2/tasks.ts';

export default taskFrom(oauth2Tasks, 'oauth2_janitor', async (c: OAuth2TaskContext, p) => {
  await c.oauth2.janitor.runTask(p.targets);
});
