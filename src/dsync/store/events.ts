/** dsync_events: the DirectorySyncEvents written with each change, in commit order per directory. */
import { sql } from 'kysely';
import type { Executor } from '../tables.ts';
import type { DirectorySyncEvent } from '../types.ts';

export interface EventRow {
  id: string;
  directoryId: string;
  seq: number;
  event: string;
  payload: DirectorySyncEvent;
  createdAt: Date;
}

export interface NewEvents {
  directoryId: string;
  /** In order; they get the directory's next sequence numbers. */
  events: Array<{ id: string; event: string; payload: DirectorySyncEvent }>;
  createdAt: Date;
  /** How they are queued for delivery: not at all, for the batch processor, or for the sender. */
  outbox: 'none' | 'batch' | 'realtime';
}

/**
 * Writes a change's events in one statement: takes the next sequence numbers (the `UPDATE` of the
 * directory row locks it until the transaction ends, so numbers follow commit order; after waiting
 * for that lock it sees the latest `event_seq`), inserts the events, their outbox rows and, with
 * `log_webhook_events` in real-time mode, their pending webhook log rows.
 * Undefined when the directory is gone; the caller rolls back when it is deactivated. The first
 * event's seq is `before + 1`. (The sender check must be a statement of its own, after this one:
 * this statement's snapshot predates the lock wait; see store/outbox.ts claimSender.)
 */
export async function writeEvents(
  db: Executor,
  w: NewEvents,
): Promise<{ before: number; deactivated: boolean } | undefined> {
  const n = w.events.length;
  const mode = w.outbox === 'none' ? null : w.outbox;
  const { rows } = await sql<{ before: string; deactivated: boolean }>`
    with seq as (
      update dsync_directories set event_seq = event_seq + ${n}::bigint where id = ${w.directoryId}::uuid
      returning event_seq - ${n}::bigint as before, deactivated,
        (log_webhook_events and ${mode}::text = 'realtime') as logged, webhook_endpoint
    ), ev as (
      insert into dsync_events (id, directory_id, seq, event, payload, created_at)
      select (t.e ->> 'id')::uuid, ${w.directoryId}::uuid, seq.before + t.ord, t.e ->> 'event', t.e -> 'payload',
        ${w.createdAt}::timestamptz
      from seq, json_array_elements(${JSON.stringify(w.events)}::json) with ordinality as t(e, ord)
      returning id, seq, payload
    ), ob as (
      insert into dsync_webhook_outbox (event_id, directory_id, seq, mode, job_id, logged)
      select ev.id, ${w.directoryId}::uuid, ev.seq, ${mode}::text, null, seq.logged from ev, seq
      where ${mode}::text is not null
    ), lg as (
      -- With log_webhook_events, a real-time event's log row is written now, pending (sql/0280).
      insert into dsync_webhook_logs (id, directory_id, event_id, webhook_endpoint, payload, status, status_code,
        delivered, error, attempt, created_at, completed_at, duration_ms)
      select gen_random_uuid(), ${w.directoryId}::uuid, ev.id, seq.webhook_endpoint, ev.payload, 'pending', null,
        false, null, 0, ${w.createdAt}::timestamptz, null, null
      from ev, seq where seq.logged
    )
    select before, deactivated from seq`.execute(db);
  const r = rows[0];
  return r && { before: Number(r.before), deactivated: r.deactivated };
}

/** A directory's events after `afterSeq`, in sequence order. */
export async function listEvents(db: Executor, directoryId: string, afterSeq = 0, limit = 100): Promise<EventRow[]> {
  const rows = await db
    .selectFrom('dsync_events')
    .selectAll()
    .where('directory_id', '=', directoryId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    directoryId: r.directory_id,
    seq: Number(r.seq),
    event: r.event,
    payload: r.payload as unknown as DirectorySyncEvent,
    createdAt: r.created_at,
  }));
}
