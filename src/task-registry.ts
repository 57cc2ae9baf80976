/**
 * The registry of every task (task name → zod schema of its payload), combined from the core's and
 * each domain's. `tasks/<name>.ts` defines the task of each entry (test/unit/task-registry.test.ts
 * checks both ways); `Container.jobs` submits jobs typed by it.
 */
import { coreTasks } from './core/audit/tasks.ts';
import type { Config } from './core/config/load.ts';
import type { WorkerLane } from './core/jobs/runner.ts';
import { DELIVER_TASK, dsyncTasks } from './dsync/index.ts';
import { oauth2Tasks } from './oauth2/index.ts';

function combine<A extends object, B extends object, C extends object>(a: A, b: B, c: C): A & B & C {
  const out: Record<string, unknown> = {};
  for (const r of [a, b, c])
    for (const [k, v] of Object.entries(r)) {
      if (k in out) throw new Error(`task ${k} is registered twice`);
      out[k] = v;
    }
  return out as A & B & C;
}

export const taskRegistry = combine(coreTasks, oauth2Tasks, dsyncTasks);
export type Tasks = typeof taskRegistry;

/** The tasks a worker runs in job slots of their own (see WorkerLane): the webhook senders. */
export function workerLanes(config: Config): WorkerLane[] {
  return [{ name: 'webhook', tasks: [DELIVER_TASK], concurrency: config.dsync.webhook.concurrency }];
}
