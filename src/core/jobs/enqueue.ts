/**
 * The graphile-worker calls themselves: add a job, schedule a keyed job no later than a time, add a
 * keyed job only when none waits, and read job state. Each takes a `Query` (a kysely executor or a
 * bare pg client), so the same SQL runs inside a data transaction (queue in the data database) and
 * in the relay's transaction on the queue database (src/core/jobs/relay.ts). Job state is read
 * through graphile-worker's public `graphile_worker.jobs` view only (its private tables change
 * between versions).
 *
 * Services do not call these directly: they submit jobs through the typed `Jobs` of their domain
 * (registry.ts), which routes them to the data transaction or to the outbox (queue.ts). `enqueue`
 * stays exported as the low-level, untyped call (tests).
 */
import { CompiledQuery } from 'kysely';
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

/**
 * What to do with a job:
 * - `add`: add it (graphile-worker's `add_job`, with its job-key rules);
 * - `schedule`: make sure the keyed job runs no later than `spec.runAt` (add it when there is none,
 *   or only a running or dead one; move a waiting one earlier; leave an earlier one as it is);
 * - `ensure`: add the keyed job only when none is waiting.
 */
export type JobOp = 'add' | 'schedule' | 'ensure';

export interface JobRequest {
  op: JobOp;
  task: string;
  /** Carries the trace context already (`withTraceContext`). */
  payload: unknown;
  spec: JobSpec;
}

/** A parameterised query on the queue database: `$1…` placeholders. */
export type Query = <R>(text: string, values: readonly unknown[]) => Promise<R[]>;

export const queryOf =
  (exec: Executor): Query =>
  async <R>(text: string, values: readonly unknown[]) =>
    (await exec.executeQuery<R>(CompiledQuery.raw(text, [...values]))).rows;

const ADD_JOB = `select (graphile_worker.add_job(
    identifier => $1::text,
    payload => $2::json,
    queue_name => $3::text,
    run_at => $4::timestamptz,
    max_attempts => $5::int,
    job_key => $6::text,
    priority => $7::int,
    job_key_mode => $8::text
  )).id as id`;

const WAITING = `select run_at from graphile_worker.jobs
  where key = $1 and locked_at is null and attempts < max_attempts`;

async function addJob(q: Query, task: string, payload: unknown, spec: JobSpec): Promise<number> {
  const rows = await q<{ id: number | string }>(ADD_JOB, [
    task,
    JSON.stringify(payload ?? {}),
    spec.queueName ?? null,
    spec.runAt ?? null,
    spec.maxAttempts,
    spec.jobKey ?? null,
    spec.priority ?? null,
    spec.jobKeyMode ?? null,
  ]);
  return Number(rows[0]?.id);
}

/** Applies one job request to graphile-worker in the database `q` talks to. */
export async function applyJob(q: Query, job: JobRequest): Promise<void> {
  if (job.op === 'add') {
    await addJob(q, job.task, job.payload, job.spec);
    return;
  }
  const key = job.spec.jobKey;
  if (!key) throw new Error(`job ${job.task}: ${job.op} needs a job key`);
  const waiting = await q<{ run_at: Date | string }>(WAITING, [key]);
  const current = waiting[0]?.run_at;
  if (job.op === 'ensure') {
    if (current === undefined) await addJob(q, job.task, job.payload, job.spec);
    return;
  }
  const runAt = job.spec.runAt ?? new Date();
  if (current !== undefined && new Date(current).getTime() <= runAt.getTime()) return;
  await addJob(q, job.task, job.payload, { ...job.spec, runAt, jobKeyMode: 'replace' });
}

/**
 * Applies job requests in order, in the caller's transaction, with one statement per run of adds:
 * `graphile_worker.add_jobs` (one insert) for jobs of one task and spec without queue or key, whose
 * order does not matter; otherwise one `add_job` call per job in array order, so that jobs of a
 * named queue get ids (and so run) in the order given.
 */
export async function applyJobs(q: Query, jobs: readonly JobRequest[]): Promise<void> {
  for (let i = 0; i < jobs.length; ) {
    const first = jobs[i] as JobRequest;
    let j = i + 1;
    if (first.op === 'add') while (j < jobs.length && (jobs[j] as JobRequest).op === 'add') j++;
    const run = jobs.slice(i, j);
    if (run.length === 1) await applyJob(q, first);
    else if (run.every((x) => unordered(first, x)))
      await addMany(
        q,
        first.task,
        run.map((x) => x.payload),
        first.spec,
      );
    else await addInOrder(q, run);
    i = j;
  }
}

const unordered = (a: JobRequest, b: JobRequest) =>
  !b.spec.jobKey &&
  !b.spec.queueName &&
  b.task === a.task &&
  b.spec.runAt?.getTime() === a.spec.runAt?.getTime() &&
  b.spec.maxAttempts === a.spec.maxAttempts &&
  b.spec.priority === a.spec.priority;

async function addMany(q: Query, task: string, payloads: readonly unknown[], spec: JobSpec): Promise<void> {
  await q(
    `select count(*) from graphile_worker.add_jobs(array(
      select row($1::text, p, $2::text, $3::timestamptz, $4::int, null::text, $5::int, null::text[])::graphile_worker.job_spec
      from json_array_elements($6::json) with ordinality as x(p, ord) order by ord
    ))`,
    [
      task,
      spec.queueName ?? null,
      spec.runAt ?? null,
      spec.maxAttempts,
      spec.priority ?? null,
      JSON.stringify(payloads),
    ],
  );
}

async function addInOrder(q: Query, jobs: readonly JobRequest[]): Promise<void> {
  const rows = jobs.map((x) => ({
    task: x.task,
    payload: x.payload ?? {},
    queueName: x.spec.queueName ?? null,
    runAt: x.spec.runAt?.toISOString() ?? null,
    maxAttempts: x.spec.maxAttempts,
    jobKey: x.spec.jobKey ?? null,
    priority: x.spec.priority ?? null,
    jobKeyMode: x.spec.jobKeyMode ?? null,
  }));
  await q(
    `select (graphile_worker.add_job(
       identifier => x.j->>'task',
       payload => (x.j->'payload')::json,
       queue_name => x.j->>'queueName',
       run_at => (x.j->>'runAt')::timestamptz,
       max_attempts => (x.j->>'maxAttempts')::int,
       job_key => x.j->>'jobKey',
       priority => (x.j->>'priority')::int,
       job_key_mode => x.j->>'jobKeyMode'
     )).id
     from jsonb_array_elements($1::jsonb) with ordinality as x(j, ord)
     order by x.ord`,
    [JSON.stringify(rows)],
  );
}

/**
 * The low-level, untyped add (graphile-worker in the database of `exec`), returning the job id.
 * Services submit through their domain's typed `Jobs` instead (registry.ts).
 */
export async function enqueue(exec: Executor, task: string, payload: unknown, spec: JobSpec): Promise<number> {
  return addJob(queryOf(exec), task, withTraceContext(payload ?? {}), spec);
}

/** The state of keyed jobs in graphile-worker: live (will still run), dead (out of attempts), or absent. */
export type JobState = 'live' | 'dead';

export async function keyedJobStates(q: Query, keys: readonly string[]): Promise<Map<string, JobState>> {
  const out = new Map<string, JobState>();
  if (!keys.length) return out;
  const rows = await q<{ key: string; live: boolean }>(
    `select key, attempts < max_attempts or locked_at is not null as live
     from graphile_worker.jobs where key = any($1::text[])`,
    [keys],
  );
  for (const r of rows) out.set(r.key, r.live ? 'live' : 'dead');
  return out;
}

export async function jobStatesById(q: Query, ids: readonly number[]): Promise<Map<number, JobState>> {
  const out = new Map<number, JobState>();
  if (!ids.length) return out;
  const rows = await q<{ id: string | number; live: boolean }>(
    `select id, attempts < max_attempts or locked_at is not null as live
     from graphile_worker.jobs where id = any($1::bigint[])`,
    [ids],
  );
  for (const r of rows) out.set(Number(r.id), r.live ? 'live' : 'dead');
  return out;
}
