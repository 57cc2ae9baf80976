/**
 * dsync_webhook_logs, for directories with `log_webhook_events`: one row per real-time event
 * (written pending when it is queued, updated by each attempt) and one per batch POST.
 */
import { type Selectable, sql } from 'kysely';
import type { DsyncWebhookLogsTable, Executor } from '../tables.ts';

export type WebhookLogRow = Selectable<DsyncWebhookLogsTable>;

export interface NewWebhookLog {
  id: string;
  directoryId: string;
  /** The real-time event this POST delivered (its row is updated), or undefined (a row per POST). */
  eventId?: string | undefined;
  endpoint: string;
  /** The exact body sent. */
  body: string;
  statusCode: number;
  delivered: boolean;
  error: string | null;
  attempt: number;
  createdAt: Date;
  completedAt: Date;
}

/**
 * Records one POST: a new row, or, for a real-time event, the update of its row (written pending
 * when the event was queued; inserted here when it was not, e.g. the flag was turned on after).
 */
export async function insertLog(db: Executor, l: NewWebhookLog): Promise<void> {
  const outcome = {
    webhook_endpoint: l.endpoint,
    payload: l.body,
    status: l.delivered ? ('delivered' as const) : ('failed' as const),
    status_code: l.statusCode,
    delivered: l.delivered,
    error: l.error,
    attempt: l.attempt,
    completed_at: l.completedAt,
    duration_ms: Math.max(0, l.completedAt.getTime() - l.createdAt.getTime()),
  };
  const q = db.insertInto('dsync_webhook_logs').values({
    id: l.id,
    directory_id: l.directoryId,
    event_id: l.eventId ?? null,
    created_at: l.createdAt,
    ...outcome,
  });
  // The row keeps the time its event was queued (created_at) and counts its attempts.
  const update = { ...outcome, attempt: sql<number>`dsync_webhook_logs.attempt + 1` };
  await (l.eventId ? q.onConflict((oc) => oc.column('event_id').doUpdateSet(update)) : q).execute();
}

export interface LogScope {
  tenant: string;
  product: string;
  directoryId?: string | undefined;
}

function scoped(db: Executor, s: LogScope) {
  let q = db
    .selectFrom('dsync_webhook_logs as l')
    .innerJoin('dsync_directories as d', 'd.id', 'l.directory_id')
    .where('d.tenant', '=', s.tenant)
    .where('d.product', '=', s.product);
  if (s.directoryId !== undefined) q = q.where('l.directory_id', '=', s.directoryId);
  return q;
}

/** Newest first. */
export async function listLogs(
  db: Executor,
  s: LogScope,
  p: { offset: number; limit: number },
): Promise<WebhookLogRow[]> {
  return scoped(db, s)
    .selectAll('l')
    .orderBy('l.created_at', 'desc')
    .orderBy('l.id', 'desc')
    .offset(p.offset)
    .limit(p.limit)
    .execute();
}

export async function findLog(db: Executor, s: LogScope, id: string): Promise<WebhookLogRow | undefined> {
  return scoped(db, s).selectAll('l').where('l.id', '=', id).executeTakeFirst();
}

export async function deleteLog(db: Executor, s: LogScope, id: string): Promise<boolean> {
  const found = await scoped(db, s).select('l.id').where('l.id', '=', id).executeTakeFirst();
  if (!found) return false;
  await db.deleteFrom('dsync_webhook_logs').where('id', '=', id).execute();
  return true;
}

export async function deleteDirectoryLogs(db: Executor, directoryId: string): Promise<number> {
  const r = await db.deleteFrom('dsync_webhook_logs').where('directory_id', '=', directoryId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes up to `limit` logs created before `before` (oldest first); returns how many. */
export async function purgeLogs(db: Executor, before: Date, limit: number): Promise<number> {
  const r = await db
    .deleteFrom('dsync_webhook_logs')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('dsync_webhook_logs')
        .select('id')
        .where('created_at', '<', before)
        .orderBy('created_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
