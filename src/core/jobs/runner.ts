/**
 * The graphile-worker runner over `tasks/` and `crontab`. Task files default-export a task made by
 * `defineTask`; the runner binds each one to this process's container, so no task reaches for a
 * global. Signals are handled by the caller (the CLI), which stops the runner before the database.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Logger as GraphileLogger, run, type Runner, type Task, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from '../log.ts';
import type { BoundTask } from './task.ts';

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
  crontabFile?: string;
  crontab?: string;
}

export async function startWorker(o: WorkerOptions): Promise<Runner> {
  return run({
    pgPool: o.pool,
    concurrency: o.concurrency,
    pollInterval: o.pollInterval,
    taskList: o.taskList,
    ...(o.crontab !== undefined ? { crontab: o.crontab } : { crontabFile: o.crontabFile ?? CRONTAB_FILE }),
    noHandleSignals: true,
    logger: graphileLogger(o.log),
  });
}
