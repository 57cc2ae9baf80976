/**
 * Where a data transaction's jobs go. Either way a job exists if and only if the transaction that
 * submitted it commits.
 *
 * - `direct` (`queue.dsn` empty, the default): graphile-worker lives in the data database; jobs are
 *   added by the transaction itself.
 * - `outbox` (`queue.dsn` names another database): the transaction writes its jobs to
 *   `gatehouse_job_outbox` (sql/0200_job_outbox.sql); the relay (relay.ts) moves them into
 *   graphile-worker on the queue database, in outbox order, exactly once.
 *
 * Job state (failed jobs, retries, metrics) is read on `pool`, the queue database.
 */
import type pg from 'pg';
import type { Db, Executor } from '../db/tx.ts';
import { withTraceContext } from '../observability/tracing.ts';
import {
  applyJobs,
  type JobRequest,
  type JobSpec,
  type JobState,
  jobStatesById,
  keyedJobStates,
  type Query,
  queryOf,
} from './enqueue.ts';

export interface JobQueue {
  readonly mode: 'direct' | 'outbox';
  /** The queue database (graphile-worker's schema): the data pool in direct mode. */
  readonly pool: pg.Pool;
  /** The same as a kysely handle (admin statements on job state: `jobs failed`, `jobs retry`). */
  readonly db: Db;
  /**
   * Where to run a statement on job state that belongs with the caller's transaction: that
   * transaction when the queue lives in the data database, the queue database otherwise.
   */
  stateExec(exec: Executor): Executor;
  /** Submits jobs (in order) in the caller's data transaction. */
  submit(exec: Executor, jobs: readonly JobRequest[]): Promise<void>;
  /**
   * Where keyed jobs stand, as seen from the data database: live (waiting in the outbox, or in
   * graphile-worker with attempts left or running), dead (out of attempts), or absent from the map.
   * The outbox is read before the queue, so a job the relay moves in between is still seen.
   */
  keyedStates(data: Executor, keys: readonly string[]): Promise<Map<string, JobState>>;
  /** The same by graphile-worker job id (jobs added directly, before the outbox existed). */
  statesById(ids: readonly number[]): Promise<Map<number, JobState>>;
}

/**
 * An `add` job for a server-side function to submit in its own transaction
 * (gatehouse_submit_job, sql/0240_dsync_write_functions.sql): the same job `submit` would add, with
 * the queue mode that tells the function where it goes (graphile-worker's add_job, or the outbox).
 */
export interface ServerJob {
  queue: JobQueue['mode'];
  task: string;
  payload: unknown;
  spec: JobSpec;
}

export const serverJob = (queue: JobQueue, task: string, payload: unknown, spec: JobSpec): ServerJob => ({
  queue: queue.mode,
  task,
  payload: withTraceContext(payload ?? {}),
  spec,
});

const withTrace = (jobs: readonly JobRequest[]) =>
  jobs.map((j) => ({ ...j, payload: withTraceContext(j.payload ?? {}) }));

const poolQuery =
  (pool: pg.Pool): Query =>
  async <R>(text: string, values: readonly unknown[]) =>
    (await pool.query(text, [...values])).rows as R[];

export function directQueue(db: Db, pool: pg.Pool): JobQueue {
  return {
    mode: 'direct',
    pool,
    db,
    stateExec: (exec) => exec,
    submit: (exec, jobs) => applyJobs(queryOf(exec), withTrace(jobs)),
    keyedStates: (data, keys) => keyedJobStates(queryOf(data), keys),
    statesById: (ids) => jobStatesById(poolQuery(pool), ids),
  };
}

export function outboxQueue(queueDb: Db, queuePool: pg.Pool): JobQueue {
  return {
    mode: 'outbox',
    pool: queuePool,
    db: queueDb,
    stateExec: () => queueDb,
    async submit(exec, jobs) {
      if (!jobs.length) return;
      const rows = withTrace(jobs).map((j) => ({ op: j.op, task: j.task, payload: j.payload, spec: j.spec }));
      // One statement; identities are drawn in array order, which the relay follows.
      await queryOf(exec)(
        `insert into gatehouse_job_outbox (op, task, payload, spec)
         select x.j->>'op', x.j->>'task', x.j->'payload', x.j->'spec'
         from jsonb_array_elements($1::jsonb) with ordinality as x(j, ord) order by x.ord`,
        [JSON.stringify(rows)],
      );
    },
    async keyedStates(data, keys) {
      if (!keys.length) return new Map();
      const outboxed = await queryOf(data)<{ key: string }>(
        `select distinct spec->>'jobKey' as key from gatehouse_job_outbox where spec->>'jobKey' = any($1::text[])`,
        [keys],
      );
      const states = await keyedJobStates(poolQuery(queuePool), keys);
      for (const r of outboxed) states.set(r.key, 'live');
      return states;
    },
    statesById: (ids) => jobStatesById(poolQuery(queuePool), ids),
  };
}
