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
import { gatedPool, STRAY_AFTER_MS, startLiveness } from './liveness.ts';
import { trackJobSlots } from './slots.ts';
import type { BoundTask } from './task.ts';

/**
 * How long after a job starts or completes an idle worker is woken to look for jobs.
 * graphile-worker's job fetch locks every available named-queue row it looks at (FOR UPDATE SKIP
 * LOCKED), so workers fetching at the same moment can come back empty while jobs wait; an empty
 * worker then idles until the next job insert's NOTIFY or `worker.poll_interval`.
 * - Named queues end together often (webhook senders stepping down or handing over), so each
 *   completed job wakes one idle worker a moment later, after the completing worker's own fetch.
 * - Jobs are added together too (the first writes of several directories after a quiet spell each
 *   start a sender): their NOTIFYs wake as many workers at once, and those that come back empty
 *   would leave the rest waiting up to the poll interval. So each started job, while a slot is
 *   left, wakes one more idle worker a moment later: a fetch that came back empty beside it is
 *   followed by one that runs alone, and the chain ends with a fetch that finds nothing.
 */
const NUDGE_AFTER_MS = 5;

/** A job that ran this long is remembered for STRAY_AFTER_MS after it finished (see startWorker). */
const LONG_JOB_MS = 60_000;

/** How long a stopping worker waits for its last jobs' completions to be written. */
const SETTLE_MS = 10_000;

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

/**
 * Tasks whose jobs run in job slots of their own: a second graphile-worker runner in the same
 * process, on the same pool, fetching only these tasks. Jobs that mostly wait on the network (a
 * webhook sender holds its slot while its directory has traffic) then neither wait behind the
 * other jobs nor keep them waiting, and their slots cost no connections of their own: a job takes
 * a pooled connection only for each of its statements.
 */
export interface WorkerLane {
  /** Names the lane in the worker's logs. */
  name: string;
  tasks: readonly string[];
  /** The lane's job slots; 0 runs its tasks in the worker's `concurrency` slots. */
  concurrency: number;
}

export interface WorkerOptions {
  pool: pg.Pool;
  log: Logger;
  /** Job slots for every task not in a lane. */
  concurrency: number;
  /** Tasks run in slots of their own (see WorkerLane). */
  lanes?: readonly WorkerLane[];
  pollInterval: number;
  taskList: TaskList;
  /** Path of the crontab file (default: the shipped `crontab`); `crontab` gives its text instead. */
  crontabFile?: string;
  crontab?: string;
  /** How often dead worker processes are looked for (see liveness.ts); default 10 s. */
  livenessIntervalMs?: number;
}

/**
 * Starts a graphile-worker runner, and one more per lane (see WorkerLane) that has slots and tasks
 * in `taskList`. Their pools register themselves as live (liveness.ts), and the jobs of dead
 * workers are released at start and then every `livenessIntervalMs`. The crontab runs on the
 * first runner only. The runner returned stops the lanes' runners with its own.
 */
export async function startWorker(o: WorkerOptions): Promise<Runner> {
  // graphile-worker treats a missing crontab file as an empty one; a configured path must exist.
  if (o.crontabFile && !existsSync(resolve(o.crontabFile)))
    throw new Error(`worker.crontab: the crontab file ${o.crontabFile} does not exist`);
  const main: TaskList = { ...o.taskList };
  const lanes: { lane: WorkerLane; tasks: TaskList }[] = [];
  for (const lane of o.lanes ?? []) {
    const tasks: TaskList = {};
    for (const t of lane.tasks) {
      const task = main[t];
      if (!task) continue;
      tasks[t] = task;
      delete main[t];
    }
    if (lane.concurrency > 0 && Object.keys(tasks).length) lanes.push({ lane, tasks });
    else Object.assign(main, tasks);
  }
  // The jobs this process runs, and those that ran for a minute or more and finished within
  // STRAY_AFTER_MS (their completions may still be on their way): a liveness sweep never takes them
  // for strays (liveness.ts). A shorter job finished more than STRAY_AFTER_MS less a minute
  // before its lock looks stray, longer than a completion is retried (gatedPool).
  const running = new Map<string, number>();
  const finished = new Map<string, number>();
  const held = () => {
    const since = Date.now() - STRAY_AFTER_MS;
    for (const [id, at] of finished) if (at < since) finished.delete(id);
    return [...running.keys(), ...finished.keys()];
  };
  const liveness = await startLiveness({
    pool: o.pool,
    log: o.log,
    intervalMs: o.livenessIntervalMs ?? 10_000,
    held,
  });
  // Job-locking connections wait for this process's pool registration (see liveness.ts).
  const pgPool = gatedPool(o.pool, liveness.registered);
  const untracks: Array<() => void> = [];
  const runners: Runner[] = [];
  /** One graphile-worker runner; `crontab` given or the configured file. */
  const start = (taskList: TaskList, concurrency: number, crontab: { crontab: string } | { crontabFile: string }) => {
    const events = new EventEmitter();
    events.on('pool:create', ({ workerPool }: { workerPool: { id: string } }) => liveness.register(workerPool.id));
    events.on('job:start', ({ job }: { job: { id: string } }) => running.set(job.id, Date.now()));
    events.on('job:complete', ({ job }: { job: { id: string } }) => {
      const now = Date.now();
      if (now - (running.get(job.id) ?? now) >= LONG_JOB_MS) finished.set(job.id, now);
      running.delete(job.id);
    });
    untracks.push(
      trackJobSlots(events, concurrency, Object.keys(taskList), {
        wakeAfterCompleteMs: NUDGE_AFTER_MS,
        wakeAfterStartMs: NUDGE_AFTER_MS,
      }),
    );
    return run({
      pgPool,
      concurrency,
      pollInterval: o.pollInterval,
      taskList,
      ...crontab,
      noHandleSignals: true,
      logger: graphileLogger(o.log),
      events: events as never,
    });
  };
  const untrack = () => {
    for (const u of untracks.splice(0)) u();
  };
  try {
    runners.push(
      await start(
        main,
        o.concurrency,
        o.crontab !== undefined
          ? { crontab: o.crontab }
          : { crontabFile: o.crontabFile ? resolve(o.crontabFile) : CRONTAB_FILE },
      ),
    );
    for (const l of lanes) runners.push(await start(l.tasks, l.lane.concurrency, { crontab: '' }));
  } catch (e) {
    await Promise.allSettled(runners.map((r) => r.stop()));
    untrack();
    await liveness.stop();
    throw e;
  }
  await liveness.ready();
  await liveness.sweep().catch((e) => o.log.warn({ err: e }, 'worker liveness check failed'));
  const runner = runners[0] as Runner;
  const stops = runners.map((r) => r.stop.bind(r));
  let stopping: Promise<void> | undefined;
  runner.stop = (reason?: string) => {
    stopping ??= (async () => {
      try {
        const results = await Promise.allSettled(stops.map((stop) => stop(reason)));
        // The last jobs' completions, which graphile-worker does not wait for (see GatedPool).
        await pgPool.settled(SETTLE_MS);
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      } finally {
        untrack();
        await liveness.stop();
      }
    })();
    return stopping;
  };
  const ended = () => {
    untrack();
    return liveness.stop();
  };
  // A lane's runner that fails on its own takes the others down with it: a worker without one of
  // its lanes would leave those jobs waiting while it looks healthy.
  for (const [i, { lane }] of lanes.entries())
    runners[i + 1]?.promise.catch((e: unknown) => {
      o.log.error({ err: e, lane: lane.name }, 'a worker lane failed; stopping the worker');
      runner.stop().catch(() => {});
    });
  runner.promise.then(ended, ended);
  return runner;
}
