/**
 * `defineTask(schema, handler)`: a graphile-worker task whose payload is parsed with zod and whose
 * handler receives the process's container. A payload that does not parse fails the job without
 * retries being useful, so it is reported clearly in `last_error`.
 */
import type { JobHelpers, Task } from 'graphile-worker';
import type { z } from 'zod';

export type TaskHandler<C, P> = (ctx: C, payload: P, helpers: JobHelpers) => Promise<void>;

export interface BoundTask<C> extends Task {
  bindTo(ctx: C): Task;
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
  unbound.bindTo = (ctx: C) =>
    (async (payload: unknown, helpers: JobHelpers) => handler(ctx, parse(payload), helpers)) as Task;
  return unbound;
}
