/**
 * dsync_webhook_outbox (events waiting for delivery), dsync_webhook_senders (the real-time sender
 * of each directory) and dsync_webhook_backoff (batch mode's per-directory retry gate). See
 * sql/0150_dsync_webhooks.sql and sql/0181_dsync_webhook_senders.sql.
 */
import { withTraceContext } from '../../core/observability/tracing.ts';
import { sql } from 'kysely';
import type { Executor } from '../../core/db/tx.ts';
import type { DirectorySyncEvent } from '../types.ts';
import type { EventRow } from './events.ts';

export type DeliveryMode = 'realtime' | 'batch';

/** Advisory-lock class of batch mode (the second key is hashtext(directory id)). */
const BATCH_LOCK = 0x64_73_62_74; // 'dsbt'

/** Takes the batch lock of a directory for the transaction; false when another processor has it. */
export async function tryLockBatch(db: Executor, directoryId: string): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`
    select pg_try_advisory_xact_lock(${BATCH_LOCK}::int, hashtext(${directoryId})) as ok`.execute(db);
  return rows[0]?.ok === true;
}

export type QueuedEvent = EventRow & { jobId: number | null };

const queuedColumns = [
  'e.id',
  'e.directory_id',
  'e.seq',
  'e.event',
  'e.payload',
  'e.created_at',
  'o.job_id',
  'o.created_at as queued_at',
] as const;

type QueuedRow = {
  id: string;
  directory_id: string;
  seq: number;
  event: string;
  payload: unknown;
  created_at: Date;
  job_id: number | null;
  queued_at: Date;
};

const toQueued = (r: QueuedRow): QueuedEvent & { queuedAt: Date } => ({
  id: r.id,
  directoryId: r.directory_id,
  seq: Number(r.seq),
  event: r.event,
  payload: r.payload as DirectorySyncEvent,
  createdAt: r.created_at,
  jobId: r.job_id === null ? null : Number(r.job_id),
  queuedAt: r.queued_at,
});

/** The undelivered events of one mode of a directory (optionally only a job's), oldest first. */
export async function queuedEvents(
  db: Executor,
  directoryId: string,
  mode: DeliveryMode,
  limit: number,
  jobId?: number,
): Promise<QueuedEvent[]> {
  let q = db
    .selectFrom('dsync_webhook_outbox as o')
    .innerJoin('dsync_events as e', 'e.id', 'o.event_id')
    .select(queuedColumns)
    .where('o.directory_id', '=', directoryId)
    .where('o.mode', '=', mode);
  if (jobId !== undefined) q = q.where('o.job_id', '=', jobId);
  const rows = await q.orderBy('o.seq').limit(limit).execute();
  return rows.map((r) => toQueued(r as QueuedRow));
}

/** Batch mode's queue across directories, oldest first (Jackson's `fetchNextBatch`). */
export async function batchQueue(
  db: Executor,
  offset: number,
  limit: number,
): Promise<Array<QueuedEvent & { queuedAt: Date; attempts: number }>> {
  const rows = await db
    .selectFrom('dsync_webhook_outbox as o')
    .innerJoin('dsync_events as e', 'e.id', 'o.event_id')
    .leftJoin('dsync_webhook_backoff as b', 'b.directory_id', 'o.directory_id')
    .select([...queuedColumns, 'b.attempts'])
    .where('o.mode', '=', 'batch')
    .orderBy('o.created_at')
    .orderBy('o.directory_id')
    .orderBy('o.seq')
    .offset(offset)
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...toQueued(r as QueuedRow), attempts: r.attempts ?? 0 }));
}

/** Removes delivered events from the outbox and stamps them delivered (one statement). */
export async function markDelivered(db: Executor, eventIds: string[], at: Date): Promise<void> {
  if (!eventIds.length) return;
  await sql`with gone as (
      delete from dsync_webhook_outbox where event_id = any(${eventIds}::uuid[]) returning event_id
    )
    update dsync_events set delivered_at = ${at} where id in (select event_id from gone)`.execute(db);
}

/** Drops a directory's undelivered events of one mode (optionally only a job's). */
export async function dropQueued(db: Executor, directoryId: string, mode: DeliveryMode, jobId?: number) {
  let q = db.deleteFrom('dsync_webhook_outbox').where('directory_id', '=', directoryId).where('mode', '=', mode);
  if (jobId !== undefined) q = q.where('job_id', '=', jobId);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows);
}

// --- real-time senders (sql/0181_dsync_webhook_senders.sql) -------------------------------------

export interface SenderJob {
  task: string;
  queueName: string;
  maxAttempts: number;
}

/**
 * Makes sure the directory has a sender that will still run (a job that exists with attempts left),
 * enqueueing one when it has none: one statement. The caller holds the directory's row lock and
 * must run this as a statement started after it got the lock, so that it sees a sender that
 * stepped down meanwhile (releaseSender) as gone.
 */
export async function ensureSender(db: Executor, directoryId: string, job: SenderJob): Promise<void> {
  await sql`with live as (
      select 1 from dsync_webhook_senders s
      join graphile_worker._private_jobs j on j.id = s.job_id and j.attempts < j.max_attempts
      where s.directory_id = ${directoryId}
    ), fresh as (
      select (graphile_worker.add_job(
        identifier => ${job.task},
        payload => ${JSON.stringify(withTraceContext({ directoryId }))}::json,
        queue_name => ${job.queueName}::text,
        max_attempts => ${job.maxAttempts}::int
      )).id as id
      where not exists (select 1 from live)
    )
    insert into dsync_webhook_senders (directory_id, job_id)
    select ${directoryId}::uuid, id from fresh
    on conflict (directory_id) do update set job_id = excluded.job_id, created_at = now()`.execute(db);
}

/** Makes `jobId` the directory's sender. */
export async function setSender(db: Executor, directoryId: string, jobId: number): Promise<void> {
  await sql`insert into dsync_webhook_senders (directory_id, job_id) values (${directoryId}, ${jobId})
    on conflict (directory_id) do update set job_id = excluded.job_id, created_at = now()`.execute(db);
}

/**
 * A sender with nothing left to send steps down: under the directory's row lock (which every
 * writer of the directory takes before it queues events and looks for a sender), true and the
 * sender row removed when no real-time event waits; false when some arrived meanwhile.
 */
export async function releaseSender(db: Executor, directoryId: string, jobId: number): Promise<boolean> {
  await sql`select 1 from dsync_directories where id = ${directoryId} for no key update`.execute(db);
  const { rows } = await sql<{ waiting: boolean }>`select exists (
      select 1 from dsync_webhook_outbox where directory_id = ${directoryId} and mode = 'realtime'
    ) as waiting`.execute(db);
  if (rows[0]?.waiting) return false;
  await sql`delete from dsync_webhook_senders where directory_id = ${directoryId} and job_id = ${jobId}`.execute(db);
  return true;
}

/** Directories with real-time events waiting and no sender that will still run (its job removed by hand). */
export async function directoriesWithoutSender(db: Executor, limit = 1000): Promise<string[]> {
  const { rows } = await sql<{ directory_id: string }>`
    select distinct o.directory_id from dsync_webhook_outbox o
    where o.mode = 'realtime' and not exists (
      select 1 from dsync_webhook_senders s join graphile_worker._private_jobs j on j.id = s.job_id
      where s.directory_id = o.directory_id
    )
    limit ${limit}`.execute(db);
  return rows.map((r) => r.directory_id);
}

// --- batch mode ---------------------------------------------------------------------------------

/** Directories with queued batch events whose backoff (if any) has passed, oldest first. */
export async function dueBatchDirectories(
  db: Executor,
  now: Date,
  limit: number,
  exclude: readonly string[] = [],
): Promise<string[]> {
  let q = db.selectFrom('dsync_directories as d').select('d.id');
  if (exclude.length) q = q.where('d.id', 'not in', [...exclude]);
  const rows = await q
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('dsync_webhook_outbox as o')
          .select('o.event_id')
          .whereRef('o.directory_id', '=', 'd.id')
          .where('o.mode', '=', 'batch'),
      ),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('dsync_webhook_backoff as b')
            .select('b.directory_id')
            .whereRef('b.directory_id', '=', 'd.id')
            .where('b.next_attempt_at', '>', now),
        ),
      ),
    )
    .orderBy('d.created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** The state of batch mode's queue: how many events wait, and when the earliest backoff ends. */
export async function batchState(db: Executor): Promise<{ queued: number; earliestRetry: Date | undefined }> {
  const { rows } = await sql<{ queued: number; earliest: Date | null }>`
    select (select count(*)::int from dsync_webhook_outbox where mode = 'batch') as queued,
           (select min(b.next_attempt_at) from dsync_webhook_backoff b
             where exists (select 1 from dsync_webhook_outbox o where o.directory_id = b.directory_id and o.mode = 'batch')
           ) as earliest`.execute(db);
  return { queued: rows[0]?.queued ?? 0, earliestRetry: rows[0]?.earliest ?? undefined };
}

export interface Backoff {
  attempts: number;
  nextAttemptAt: Date;
  lastError: string;
}

export async function getBackoff(db: Executor, directoryId: string): Promise<Backoff | undefined> {
  const r = await db
    .selectFrom('dsync_webhook_backoff')
    .selectAll()
    .where('directory_id', '=', directoryId)
    .executeTakeFirst();
  return r && { attempts: r.attempts, nextAttemptAt: r.next_attempt_at, lastError: r.last_error };
}

export async function setBackoff(db: Executor, directoryId: string, b: Backoff, now: Date): Promise<void> {
  const fields = { attempts: b.attempts, next_attempt_at: b.nextAttemptAt, last_error: b.lastError, updated_at: now };
  await db
    .insertInto('dsync_webhook_backoff')
    .values({ directory_id: directoryId, ...fields })
    .onConflict((oc) => oc.column('directory_id').doUpdateSet(fields))
    .execute();
}

/** Ends backoff (after a successful batch, or an operator's retry); all directories when none given. */
export async function clearBackoff(db: Executor, directoryId?: string): Promise<number> {
  let q = db.deleteFrom('dsync_webhook_backoff');
  if (directoryId) q = q.where('directory_id', '=', directoryId);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows);
}
