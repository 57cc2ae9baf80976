/**
 * Enqueue a graphile-worker job inside the caller's transaction: the job exists if and only if the
 * state change it belongs to commits.
 */
import { sql } from 'kysely';
import type { Executor } from '../db/tx.ts';

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
      payload => ${JSON.stringify(payload ?? {})}::json,
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
      from json_array_elements(${JSON.stringify(payloads)}::json) as p
    ))`.execute(exec);
  return rows[0]?.n ?? 0;
}
