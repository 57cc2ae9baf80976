/**
 * The OAuth 2.0 tasks and their payloads (task name → zod schema). The composition root adds them
 * to the registry (src/task-registry.ts); the domain's services submit jobs through
 * `Jobs<OAuth2Tasks>`, so a wrong task name or payload is a type error where the job is enqueued.
 */
import type { Jobs } from '../core/jobs/registry.ts';
import { taskRegistry } from '../core/jobs/registry.ts';
import type { OAuth2 } from './index.ts';
import { janitorPayload } from './janitor/service.ts';
import { backchannelPayload } from './logout/channels.ts';

export const oauth2Tasks = taskRegistry({
  oauth2_backchannel_logout: backchannelPayload,
  oauth2_janitor: janitorPayload,
});

export type OAuth2Tasks = typeof oauth2Tasks;
export type OAuth2Jobs = Jobs<OAuth2Tasks>;

/** What an OAuth 2.0 task file may use: the domain. The worker passes the container, which has it. */
export interface OAuth2TaskContext {
  oauth2: OAuth2;
}
