/**
 * The graphile-worker runner over `tasks/` and `crontab`. Task files default-export a task made by
 * `defineTask`; the runner binds each one to this process's container, so no task reaches for a
 * global. Signals are handled by the caller (the CLI), which stops the runner before the database.
 */
import { EventEmitter } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Logger as GraphileLogger, type Runner, run, type Task, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from '../log.ts';
import { gatedPool, startLiveness } from './liveness.ts';
import { trackJobSlots } from './slots.ts';
import type { BoundTask } from './task.ts';

/** How long after a job completes an idle worker is woken to look for jobs (see startWorker). */
const NUDGE_AFTER_MS = 5;

export const TASKS_DIR = resolve(import.meta.dirname, '../../../tasks');
export const CRONTAB_FILE = resolve(import.meta.dirname, '../../../crontab');

export function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger((scope) => (level, message) => {
    const fields = { component: 'worker', task: scope.taskIdentifier, jobId: scope.jobId };
    if (level === 'error') log.error(fields, message);
    else if (level === 'warning') log.warn(fields, message);
    else if (level === 'info') log.info(fields, message);
    else log.debug(fields, message);
  });
}

/** Loads every task file under `tasks/` and binds it to `ctx`. */
export async function loadTaskList<C>(ctx: C, dir = TASKS_DIR): Promise<TaskList> {
  const list: TaskList = {};
  if (!existsSync(dir)) return list;
  for (const file of readdirSync(dir).sort()) {
    const m = /^([a-z0-9_]+)\.(ts|js|mjs)$/.exec(file);
    if (!m) continue;
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default?: BoundTask<C> };
    const task = mod.default;
    if (typeof task !== 'function' || typeof task.bindTo !== 'function') {
      throw new Error(`tasks/${file} must default-export a task made with defineTask()`);
    }
    if (task.taskName !== undefined && task.taskName !== m[1])
      throw new Error(`tasks/${file} defines the task ${task.taskName}: the file must be named after its task`);
    list[m[1] as string] = task.bindTo(ctx) as Task;
  }
  return list;
}

export interface WorkerOptions {
  pool: pg.Pool;
  log: Logger;
  concurrency: number;
  pollInterval: number;
  taskList: TaskList;
  /** Path of the crontab file (default: the shipped `crontab`); `crontab` gives its text instead. */
  crontabFile?: string;
  crontab?: string;
  /** How often dead worker processes are looked for (see liveness.ts); default 10 s. */
  livenessIntervalMs?: number;
}

/**
 * Starts a graphile-worker runner. Its pool registers itself as live (liveness.ts), and the jobs
 * of dead workers are released at start and then every `livenessIntervalMs`.
 */
export async function startWorker(o: WorkerOptions): Promise<Runner> {
  // graphile-worker treats a missing crontab file as an empty one; a configured path must exist.
  if (o.crontabFile && !existsSync(resolve(o.crontabFile)))
    throw new Error(`worker.crontab: the crontab file ${o.crontabFile} does not exist`);
  const liveness = await startLiveness({ pool: o.pool, log: o.log, intervalMs: o.livenessIntervalMs ?? 10_000 });
  const events = new EventEmitter();
  events.on('pool:create', ({ workerPool }: { workerPool: { id: string } }) => liveness.register(workerPool.id));
  // graphile-worker's job fetch locks every available named-queue row it looks at (FOR UPDATE SKIP
  // LOCKED), so workers fetching at the same moment can come back empty while jobs wait; an empty
  // worker then idles until the next job insert's NOTIFY or `worker.poll_interval`. Named queues
  // end together often (webhook senders stepping down or handing over), so each completed job
  // wakes one idle worker a moment later, after the completing worker's own fetch.
  const untrack = trackJobSlots(events, o.concurrency, { wakeAfterCompleteMs: NUDGE_AFTER_MS });
  let runner: Runner;
  try {
    runner = await run({
      // Job-locking connections wait for this process's pool registration (see liveness.ts).
      pgPool: gatedPool(o.pool, liveness.registered),
      concurrency: o.concurrency,
      pollInterval: o.pollInterval,
      taskList: o.taskList,
      ...(o.crontab !== undefined
        ? { crontab: o.crontab }
        : { crontabFile: o.crontabFile ? resolve(o.crontabFile) : CRONTAB_FILE }),
      noHandleSignals: true,
      logger: graphileLogger(o.log),
      events: events as never,
    });
  } catch (e) {
    untrack();
    await liveness.stop();
    throw e;
  }
  await liveness.ready();
  await liveness.sweep().catch((e) => o.log.warn({ err: e }, 'worker liveness check failed'));
  const stop = runner.stop.bind(runner);
  runner.stop = async (reason?: string) => {
    try {
      await stop(reason);
    } finally {
      untrack();
      await liveness.stop();
    }
  };
  const ended = () => {
    untrack();
    return liveness.stop();
  };
  runner.promise.then(ended, ended);
  return runner;
}
