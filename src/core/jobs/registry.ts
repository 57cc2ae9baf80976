/**
 * One registry of tasks: task name → zod schema of its payload. Each domain declares its own
 * (`src/oauth2/tasks.ts`, `src/dsync/tasks.ts`, the core's below); the composition root combines
 * them (`src/task-registry.ts`). The same registry types both ends of a job:
 *
 * - `jobsFor(registry, queue)`: what a service submits jobs with; a task name that is not in the
 *   registry, or a payload that does not match the task's schema, is a type error where the job is
 *   enqueued (`z.input` of the schema);
 * - `taskFrom(registry, name, handler)`: a task file's default export; its handler receives the
 *   parsed payload (`z.output`), and the worker checks that the file's name is the task's name.
 */
import type { z } from 'zod';
import type { Executor } from '../db/tx.ts';
import type { JobSpec } from './enqueue.ts';
import type { JobQueue } from './queue.ts';
import { type BoundTask, defineTask, type TaskHandler } from './task.ts';

export type TaskRegistry = Readonly<Record<string, z.ZodType>>;

export type TaskName<R extends TaskRegistry> = keyof R & string;
export type PayloadIn<R extends TaskRegistry, K extends TaskName<R>> = z.input<R[K]>;
export type PayloadOut<R extends TaskRegistry, K extends TaskName<R>> = z.output<R[K]>;

/** Declares a registry (keeps the literal task names). */
export const taskRegistry = <const R extends TaskRegistry>(r: R): R => r;

/** The typed face of the job queue for one registry. */
export interface Jobs<R extends TaskRegistry> {
  readonly queue: JobQueue;
  /** Adds a job in the caller's transaction. */
  add<K extends TaskName<R>>(exec: Executor, task: K, payload: PayloadIn<R, K>, spec: JobSpec): Promise<void>;
  /** Adds one job per payload (one statement in direct mode). */
  addMany<K extends TaskName<R>>(
    exec: Executor,
    task: K,
    payloads: readonly PayloadIn<R, K>[],
    spec: Omit<JobSpec, 'jobKey' | 'jobKeyMode'>,
  ): Promise<number>;
  /** Makes sure the keyed job runs no later than `spec.runAt`. */
  schedule<K extends TaskName<R>>(
    exec: Executor,
    task: K,
    payload: PayloadIn<R, K>,
    spec: JobSpec & { jobKey: string; runAt: Date },
  ): Promise<void>;
  /** Adds the keyed job when none is waiting. */
  ensure<K extends TaskName<R>>(
    exec: Executor,
    task: K,
    payload: PayloadIn<R, K>,
    spec: JobSpec & { jobKey: string },
  ): Promise<void>;
}

export function jobsFor<R extends TaskRegistry>(_registry: R, queue: JobQueue): Jobs<R> {
  return {
    queue,
    add: (exec, task, payload, spec) => queue.submit(exec, [{ op: 'add', task, payload, spec }]),
    async addMany(exec, task, payloads, spec) {
      await queue.submit(
        exec,
        payloads.map((payload) => ({ op: 'add' as const, task, payload, spec })),
      );
      return payloads.length;
    },
    schedule: (exec, task, payload, spec) => queue.submit(exec, [{ op: 'schedule', task, payload, spec }]),
    ensure: (exec, task, payload, spec) => queue.submit(exec, [{ op: 'ensure', task, payload, spec }]),
  };
}

/** A task of the registry, named: `export default taskFrom(registry, 'name', handler)`. */
export function taskFrom<C, R extends TaskRegistry, K extends TaskName<R>>(
  registry: R,
  name: K,
  handler: TaskHandler<C, PayloadOut<R, K>>,
): BoundTask<C> {
  const schema = registry[name];
  if (!schema) throw new Error(`task ${name} is not in the task registry`);
  const task = defineTask<C, R[K]>(schema as R[K], handler);
  task.taskName = name;
  return task;
}
