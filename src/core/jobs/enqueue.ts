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
