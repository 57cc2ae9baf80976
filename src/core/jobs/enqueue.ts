/**
 * Enqueue a graphile-worker job inside the caller's transaction: the job exists if and only if the
 * state change it belongs to commits. When the caller is traced, each payload carries the trace
 * context (`_trace`, see src/core/observability/tracing.ts) so the job's span joins the trace.
 */
import { sql } from 'kysely';
import type { Executor } from '../db/tx.ts';
import { withTraceContext } from '../observability/tracing.ts';

export interface JobSpec {
  /** Jobs with the same queue name run one at a time, in order. */
  queueName?: string;
  runAt?: Date;
  /** Always set explicitly (STYLE B6). */
  maxAttempts: number;
  jobKey?: string;
  jobKeyMode?: 'replace' | 'preserve_run_at' | 'unsafe_dedupe';
  priority?: number;
}

export async function enqueue(exec: Executor, task: string, payload: unknown, spec: JobSpec): Promise<number> {
  const { rows } = await sql<{ id: number | string }>`
    select (graphile_worker.add_job(
      identifier => ${task},
      payload => ${JSON.stringify(withTraceContext(payload ?? {}))}::json,
      queue_name => ${spec.queueName ?? null}::text,
      run_at => ${spec.runAt ?? null}::timestamptz,
      max_attempts => ${spec.maxAttempts}::int,
      job_key => ${spec.jobKey ?? null}::text,
      priority => ${spec.priority ?? null}::int,
      job_key_mode => ${spec.jobKeyMode ?? null}::text
    )).id`.execute(exec);
  return Number(rows[0]?.id);
}

/**
 * Enqueues one job per payload with a single `graphile_worker.add_jobs` call, inside the caller's
 * transaction (a batch of notifications costs one statement, not one per job). Returns the count.
 */
export async function enqueueMany(
  exec: Executor,
  task: string,
  payloads: readonly unknown[],
  spec: Omit<JobSpec, 'jobKey' | 'jobKeyMode'>,
): Promise<number> {
  if (!payloads.length) return 0;
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from graphile_worker.add_jobs(array(
      select row(
        ${task}::text, p, ${spec.queueName ?? null}::text, ${spec.runAt ?? null}::timestamptz,
        ${spec.maxAttempts}::int, null::text, ${spec.priority ?? null}::int, null::text[]
      )::graphile_worker.job_spec
      from json_array_elements(${JSON.stringify(payloads.map(withTraceContext))}::json) as p
    ))`.execute(exec);
  return rows[0]?.n ?? 0;
}

/**
 * Enqueues one job per payload, in order, with one statement, and returns the job ids in payload
 * order (when the caller records which job carries what).
 */
export async function enqueueManyWithIds(
  exec: Executor,
  task: string,
  payloads: readonly unknown[],
  spec: Omit<JobSpec, 'jobKey' | 'jobKeyMode'>,
): Promise<number[]> {
  if (!payloads.length) return [];
  const { rows } = await sql<{ id: number | string }>`
    select (graphile_worker.add_job(
      identifier => ${task},
      payload => p.payload,
      queue_name => ${spec.queueName ?? null}::text,
      run_at => ${spec.runAt ?? null}::timestamptz,
      max_attempts => ${spec.maxAttempts}::int,
      priority => ${spec.priority ?? null}::int
    )).id
    from json_array_elements(${JSON.stringify(payloads.map(withTraceContext))}::json) with ordinality as p(payload, ord)
    order by p.ord`.execute(exec);
  return rows.map((r) => Number(r.id));
}

/** A job that will still run: it exists and has attempts left (waiting, backing off or running). */
export async function isJobPending(exec: Executor, id: number): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`
    select attempts < max_attempts as ok from graphile_worker._private_jobs where id = ${id}`.execute(exec);
  return rows[0]?.ok === true;
}

/** The ids among `ids` that no longer exist (completed or removed). */
export async function missingJobs(exec: Executor, ids: readonly number[]): Promise<number[]> {
  if (!ids.length) return [];
  const { rows } = await sql<{ id: number | string }>`
    select x.id from unnest(${ids}::bigint[]) as x(id)
    where not exists (select 1 from graphile_worker._private_jobs j where j.id = x.id)`.execute(exec);
  return rows.map((r) => Number(r.id));
}

/**
 * Makes sure the keyed job runs no later than `runAt`: adds it when there is none (or only a
 * running or dead one), moves a waiting one earlier, and leaves an earlier one as it is.
 */
export async function scheduleKeyed(
  exec: Executor,
  task: string,
  payload: unknown,
  spec: JobSpec & { jobKey: string; runAt: Date },
): Promise<void> {
  const { rows } = await sql<{ run_at: Date }>`
    select run_at from graphile_worker._private_jobs
    where key = ${spec.jobKey} and locked_at is null and attempts < max_attempts`.execute(exec);
  const current = rows[0]?.run_at;
  if (current && current.getTime() <= spec.runAt.getTime()) return;
  await enqueue(exec, task, payload, { ...spec, jobKeyMode: 'replace' });
}

/** Whether a keyed job is waiting (not running, not dead). */
export async function hasWaitingJob(exec: Executor, jobKey: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from graphile_worker._private_jobs
    where key = ${jobKey} and locked_at is null and attempts < max_attempts`.execute(exec);
  return (rows[0]?.n ?? 0) > 0;
}
