/**
 * dsync_webhook_outbox (events waiting for delivery), dsync_webhook_senders (the real-time sender
 * of each directory) and dsync_webhook_backoff (batch mode's per-directory retry gate). See
 * sql/0150_dsync_webhooks.sql, sql/0181_dsync_webhook_senders.sql and sql/0200_job_outbox.sql.
 */
import { sql } from 'kysely';
import { engineOf } from '../../core/db/engine.ts';
import { tryLockName } from '../../core/db/locks.ts';
import type { Executor } from '../tables.ts';
import type { DirectorySyncEvent } from '../types.ts';
import type { EventRow } from './events.ts';

export type DeliveryMode = 'realtime' | 'batch';

/** Advisory-lock class of batch mode (the second key is hashtext(directory id)). */
const BATCH_LOCK = 0x64_73_62_74; // 'dsbt'

/** Takes the batch lock of a directory for the transaction; false when another processor has it. */
export async function tryLockBatch(db: Executor, directoryId: string): Promise<boolean> {
  if (engineOf(db) === 'cockroach') return tryLockName(db, `dsync-batch:${directoryId}`);
  const { rows } = await sql<{ ok: boolean }>`
    select pg_try_advisory_xact_lock(${BATCH_LOCK}::int, hashtext(${directoryId})) as ok`.execute(db);
  return rows[0]?.ok === true;
}

/** `logged`: its webhook log row was written when it was queued (attempts update it). */
export type QueuedEvent = EventRow & { jobId: number | null; logged: boolean };

const queuedColumns = [
  'e.id',
  'e.directory_id',
  'e.seq',
  'e.event',
  'e.payload',
  'e.created_at',
  'o.job_id',
  'o.logged',
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
  logged: boolean;
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
  logged: r.logged,
  queuedAt: r.queued_at,
});

/**
 * The undelivered events of one mode of a directory (optionally only a job's, or only those after
 * `afterSeq`: a sender skips what it sent and has not marked yet), oldest first.
 */
export async function queuedEvents(
  db: Executor,
  directoryId: string,
  mode: DeliveryMode,
  limit: number,
  jobId?: number,
  afterSeq?: number,
): Promise<QueuedEvent[]> {
  let q = db
    .selectFrom('dsync_webhook_outbox as o')
    .innerJoin('dsync_events as e', 'e.id', 'o.event_id')
    .select(queuedColumns)
    .where('o.directory_id', '=', directoryId)
    .where('o.mode', '=', mode);
  if (jobId !== undefined) q = q.where('o.job_id', '=', jobId);
  if (afterSeq !== undefined) q = q.where('o.seq', '>', afterSeq);
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

/**
 * Removes delivered events from the outbox and stamps them delivered (one statement); returns those
 * whose webhook log row was written when they were queued.
 */
export async function markDelivered(db: Executor, eventIds: string[], at: Date): Promise<string[]> {
  if (!eventIds.length) return [];
  const { rows } = await sql<{ event_id: string }>`with gone as (
      delete from dsync_webhook_outbox where event_id = any(${eventIds}::uuid[]) returning event_id, logged
    ), stamped as (
      update dsync_events set delivered_at = ${at} where id in (select event_id from gone)
    )
    select event_id from gone where logged`.execute(db);
  return rows.map((r) => r.event_id);
}

/** Whether a queued event's webhook log row was written when it was queued (its attempts update it). */
export async function isLogged(db: Executor, eventId: string): Promise<boolean> {
  const { rows } = await sql<{ logged: boolean }>`select logged from dsync_webhook_outbox
    where event_id = ${eventId}::uuid`.execute(db);
  return rows[0]?.logged === true;
}

/** Drops a directory's undelivered events of one mode (optionally only a job's). */
export async function dropQueued(
  db: Executor,
  directoryId: string,
  mode: DeliveryMode,
  jobId?: number,
  reason = 'dropped',
): Promise<number> {
  // The pending log rows of the dropped events end as failed, with the reason (nothing was sent).
  const { rows } = await sql<{ n: string }>`
    with d as (
      delete from dsync_webhook_outbox
      where directory_id = ${directoryId}::uuid and mode = ${mode}
        ${jobId !== undefined ? sql`and job_id = ${jobId}` : sql``}
      returning event_id, logged
    ), l as (
      update dsync_webhook_logs set status = 'failed', error = ${`not delivered: ${reason}`}, completed_at = now()
      where event_id in (select event_id from d where logged) and status = 'pending'
    )
    select count(*) as n from d`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

// --- real-time senders (sql/0181_dsync_webhook_senders.sql, sql/0200_job_outbox.sql) ------------

/**
 * A directory's sender: `senderId` for senders of this release (its job's key is
 * `dsync:sender:<senderId>`), `jobId` alone for a job enqueued by an earlier release.
 */
export interface SenderRef {
  senderId?: string | undefined;
  jobId: number;
}

export const senderJobKey = (senderId: string): string => `dsync:sender:${senderId}`;

const matches = (s: SenderRef) =>
  s.senderId ? sql`sender_id = ${s.senderId}::uuid` : sql`sender_id is null and job_id = ${s.jobId}`;

/**
 * Claims the sender of a directory for a new sender `senderId` when it has none, or only one that
 * ran out of attempts (`failed_at`): true when claimed (the caller enqueues its job in the same
 * transaction), false when a sender is on its way. One statement, no read of the job queue. The
 * caller holds the directory's row lock, so a sender stepping down (releaseSender) is either
 * gone or still there for this statement, never half-way. On PostgreSQL a sender on its way is
 * only read, not written: the row is written (and so locked) only when it is claimed.
 */
export async function claimSender(db: Executor, directoryId: string, senderId: string): Promise<boolean> {
  const row =
    engineOf(db) === 'postgres'
      ? sql`select ${directoryId}::uuid, ${senderId}::uuid where not exists (
          select 1 from dsync_webhook_senders where directory_id = ${directoryId} and failed_at is null)`
      : sql`values (${directoryId}, ${senderId})`;
  const { rows } = await sql<{ sender_id: string }>`
    insert into dsync_webhook_senders (directory_id, sender_id) ${row}
    on conflict (directory_id) do update
      set sender_id = excluded.sender_id, job_id = null, failed_at = null, created_at = now()
      where dsync_webhook_senders.failed_at is not null
    returning sender_id`.execute(db);
  return rows.length > 0;
}

/** Makes `senderId` the directory's sender (a sender handing over to a fresh job). */
export async function setSender(db: Executor, directoryId: string, senderId: string): Promise<void> {
  await sql`insert into dsync_webhook_senders (directory_id, sender_id) values (${directoryId}, ${senderId})
    on conflict (directory_id) do update set sender_id = excluded.sender_id, job_id = null, failed_at = null,
      created_at = now()`.execute(db);
}

/**
 * Replaces the sender `old` with `senderId` if `old` is still the directory's sender (a repair):
 * true when replaced.
 */
export async function replaceSender(db: Executor, directoryId: string, old: SenderRef, senderId: string) {
  const r = await sql`update dsync_webhook_senders set sender_id = ${senderId}, job_id = null, failed_at = null,
      created_at = now()
    where directory_id = ${directoryId} and ${matches(old)}`.execute(db);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/** Marks the sender failed (out of attempts) if it is still the directory's: its next event starts a new one. */
export async function markSenderFailed(db: Executor, directoryId: string, s: SenderRef): Promise<void> {
  await sql`update dsync_webhook_senders set failed_at = now()
    where directory_id = ${directoryId} and failed_at is null and ${matches(s)}`.execute(db);
}

/**
 * A sender with nothing left to send steps down: under the directory's row lock (which every
 * writer of the directory takes before it queues events and looks for a sender), true and the
 * sender row removed when no real-time event waits; false when some arrived meanwhile.
 */
export async function releaseSender(db: Executor, directoryId: string, s: SenderRef): Promise<boolean> {
  await lockDirectoryRow(db, directoryId);
  const { rows } = await sql<{ waiting: boolean }>`select exists (
      select 1 from dsync_webhook_outbox where directory_id = ${directoryId} and mode = 'realtime'
    ) as waiting`.execute(db);
  if (rows[0]?.waiting) return false;
  await sql`delete from dsync_webhook_senders where directory_id = ${directoryId} and ${matches(s)}`.execute(db);
  return true;
}

/** Locks the directory's row until the transaction ends, as a write of its events does. */
export async function lockDirectoryRow(db: Executor, directoryId: string): Promise<void> {
  await sql`select 1 from dsync_directories where id = ${directoryId} for no key update`.execute(db);
}

export interface SenderRow extends SenderRef {
  directoryId: string;
  /** Real-time events wait for the directory. */
  waiting: boolean;
}

/** The senders not marked failed, with whether real-time events wait (for the maintenance run's check). */
export async function activeSenders(db: Executor, limit = 1000): Promise<SenderRow[]> {
  const { rows } = await sql<{
    directory_id: string;
    sender_id: string | null;
    job_id: string | null;
    waiting: boolean;
  }>`
    select s.directory_id, s.sender_id, s.job_id, exists (
      select 1 from dsync_webhook_outbox o where o.directory_id = s.directory_id and o.mode = 'realtime'
    ) as waiting
    from dsync_webhook_senders s where s.failed_at is null
    order by s.created_at limit ${limit}`.execute(db);
  return rows.map((r) => ({
    directoryId: r.directory_id,
    senderId: r.sender_id ?? undefined,
    jobId: Number(r.job_id ?? 0),
    waiting: r.waiting,
  }));
}

/** Directories with real-time events waiting and no sender row at all. */
export async function directoriesWithoutSender(db: Executor, limit = 1000): Promise<string[]> {
  const { rows } = await sql<{ directory_id: string }>`
    select distinct o.directory_id from dsync_webhook_outbox o
    where o.mode = 'realtime'
      and not exists (select 1 from dsync_webhook_senders s where s.directory_id = o.directory_id)
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
