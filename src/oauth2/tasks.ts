/**
 * The OAuth 2.0 tasks and their payloads (task name → zod schema). The composition root adds them
 * to the registry (src/task-registry.ts); the domain's services submit jobs through
 * `Jobs<OAuth2Tasks>`, so a wrong task name or payload is a type error where the job is enqueued.
 * What a task file receives is declared apart (src/oauth2/task-context.ts), so that this registry,
 * which the services import, never reaches back to the domain's face.
 */
import type { Jobs } from '../core/jobs/registry.ts';
import { taskRegistry } from '../core/jobs/registry.ts';
import { janitorPayload } from './janitor/schemas.ts';
import { backchannelPayload } from './logout/schemas.ts';

export const oauth2Tasks = taskRegistry({
  oauth2_backchannel_logout: backchannelPayload,
  oauth2_janitor: janitorPayload,
});

export type OAuth2Tasks = typeof oauth2Tasks;
export type OAuth2Jobs = Jobs<OAuth2Tasks>;
