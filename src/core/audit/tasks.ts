/** The core's own tasks (task name → zod schema of the payload); see src/core/jobs/registry.ts. */
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/load.ts';
import type { CoreDatabase } from '../db/schema.ts';
import { type Jobs, taskRegistry } from '../jobs/registry.ts';
import type { Logger } from '../log.ts';

export const coreTasks = taskRegistry({
  audit_purge: z.object({}).passthrough(),
});

export type CoreTasks = typeof coreTasks;

/** What a core task file may use. The worker passes the process's container, which has all of it. */
export interface CoreTaskContext {
  config: Pick<Config, 'audit'>;
  db: Kysely<CoreDatabase>;
  clock: Clock;
  log: Logger;
  jobs: Jobs<CoreTasks>;
}
