/**
 * Inspecting and re-enqueueing dead jobs. A job is dead when `attempts >= max_attempts` and no worker
 * runs it; it stays in graphile-worker's table with its last error until it is retried or removed.
 */
import { sql } from 'kysely';
import type { Executor } from '../db/tx.ts';

export interface FailedJob {
  id: number;
  task: string;
  queue: string | null;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  /** When it last ran or was due (graphile-worker moves it on with each attempt's backoff). */
  runAt: Date;
  createdAt: Date;
  updatedAt: Date;
  key: string | null;
}

export interface JobFilter {
  task?: string;
  ids?: number[];
  queue?: string;
}

/**
 * Dead jobs: out of attempts and not running. A job on its last attempt has `attempts >=
 * max_attempts` from the moment a worker takes it (graphile-worker counts the attempt when it
 * starts): while it is locked it may still succeed, and it is not listed nor retried.
 */
function where(f: JobFilter) {
  return sql`attempts >= max_attempts and locked_at is null
    ${f.task ? sql`and task_identifier = ${f.task}` : sql``}
    ${f.queue ? sql`and queue_name = ${f.queue}` : sql``}
    ${f.ids?.length ? sql`and id = any(${f.ids}::bigint[])` : sql``}`;
}

export async function listFailedJobs(exec: Executor, f: JobFilter = {}, limit = 100): Promise<FailedJob[]> {
  const { rows } = await sql<{
    id: number;
    task_identifier: string;
    queue_name: string | null;
    attempts: number;
    max_attempts: number;
    last_error: string | null;
    run_at: Date;
    created_at: Date;
    updated_at: Date;
    key: string | null;
  }>`select id, task_identifier, queue_name, attempts, max_attempts, last_error, run_at, created_at, updated_at, key
     from graphile_worker.jobs where ${where(f)} order by id limit ${limit}`.execute(exec);
  return rows.map((r) => ({
    id: Number(r.id),
    task: r.task_identifier,
    queue: r.queue_name,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    lastError: r.last_error,
    runAt: r.run_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    key: r.key,
  }));
}

/** How many dead jobs match (no limit). */
export async function countFailedJobs(exec: Executor, f: JobFilter = {}): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from graphile_worker.jobs where ${where(f)}`.execute(exec);
  return Number(rows[0]?.n ?? 0);
}

/** Makes dead jobs runnable now with a fresh attempt budget. Returns the ids re-enqueued. */
export async function retryFailedJobs(exec: Executor, f: JobFilter = {}): Promise<number[]> {
  const { rows: ids } = await sql<{ id: number }>`select id from graphile_worker.jobs where ${where(f)}`.execute(exec);
  if (!ids.length) return [];
  const { rows } = await sql<{ id: number }>`
    select id from graphile_worker.reschedule_jobs(${ids.map((r) => Number(r.id))}::bigint[], run_at := now(), attempts := 0)`.execute(
    exec,
  );
  return rows.map((r) => Number(r.id));
}

/**
 * Deletes dead jobs (out of attempts, not running) holding one of these job keys. A dead job keeps
 * its key, and `unsafe_dedupe` enqueues (one job per key, even while it runs) would otherwise
 * never add that key again. Returns the ids deleted.
 */
export async function removeDeadJobsByKey(exec: Executor, keys: string[]): Promise<number[]> {
  if (!keys.length) return [];
  const { rows } = await sql<{ id: number }>`
    select id from graphile_worker.complete_jobs(array(
      select id from graphile_worker.jobs
      where key = any(${keys}::text[]) and attempts >= max_attempts and locked_at is null
    ))`.execute(exec);
  return rows.map((r) => Number(r.id));
}

export type JobState = 'waiting' | 'scheduled' | 'running' | 'failed';

export interface JobCount {
  task: string;
  state: JobState;
  count: number;
}

/**
 * Jobs by task and state (completed jobs are deleted, so they are not counted): `running` (locked
 * by a worker), `failed` (out of attempts), `scheduled` (due later: a retry's backoff or a run_at
 * in the future), `waiting` (due now). The same states as the `gatehouse_jobs` gauge.
 */
export async function countJobs(exec: Executor): Promise<JobCount[]> {
  const { rows } = await sql.raw<{ task: string; state: JobState; n: number }>(JOB_COUNTS_SQL).execute(exec);
  return rows.map((r) => ({ task: r.task, state: r.state, count: Number(r.n) }));
}

/** The query behind `countJobs`, also run by the `gatehouse_jobs` gauge on its own pool. */
export const JOB_COUNTS_SQL = `
  select task_identifier as task,
    case when locked_at is not null then 'running'
         when attempts >= max_attempts then 'failed'
         when run_at > now() then 'scheduled'
         else 'waiting' end as state,
    count(*)::int as n
  from graphile_worker.jobs group by 1, 2 order by 1, 2`;
