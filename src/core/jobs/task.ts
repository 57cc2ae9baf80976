/**
 * `defineTask(schema, handler)`: a graphile-worker task whose payload is parsed with zod and whose
 * handler receives the context the runner binds it to (the process's container; a task's type asks
 * only for the part it uses). A payload that does not parse fails the job without
 * retries being useful, so it is reported clearly in `last_error`.
 */
import type { JobHelpers, Task } from 'graphile-worker';
import type { z } from 'zod';
import { runInScope } from '../observability/scope.ts';
import { inSpan, SpanKind, takeTraceContext } from '../observability/tracing.ts';

export type TaskHandler<C, P> = (ctx: C, payload: P, helpers: JobHelpers) => Promise<void>;

export interface BoundTask<C> extends Task {
  bindTo(ctx: C): Task;
  /** The registry name of a task made with `taskFrom` (registry.ts): its file must be `tasks/<name>.ts`. */
  taskName?: string;
}

export function defineTask<C, S extends z.ZodType>(schema: S, handler: TaskHandler<C, z.output<S>>): BoundTask<C> {
  const parse = (payload: unknown) => {
    const r = schema.safeParse(payload);
    if (!r.success)
      throw new Error(
        `invalid payload: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      );
    return r.data;
  };
  // Only a bound task has a container; the task files are run by gatehouse's worker, never on their own.
  const unbound = (async (_payload: unknown, _helpers: JobHelpers): Promise<void> => {
    throw new Error('task run outside gatehouse worker: no container');
  }) as BoundTask<C>;
  // Each run gets a scope (audit events name the job) and a span whose parent is the request that
  // enqueued the job (its trace context rides in the payload).
  unbound.bindTo = (ctx: C) =>
    (async (raw: unknown, helpers: JobHelpers) => {
      const { payload, parent } = takeTraceContext(raw);
      const job = helpers.job;
      return runInScope({ requestId: `job:${job.id}`, listener: 'worker' }, () =>
        inSpan(
          `job ${job.task_identifier}`,
          {
            kind: SpanKind.CONSUMER,
            parent,
            attributes: { 'gatehouse.job.task': job.task_identifier, 'gatehouse.job.attempt': job.attempts },
          },
          () => handler(ctx, parse(payload), helpers),
        ),
      );
    }) as Task;
  return unbound;
}
