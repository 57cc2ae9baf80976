/** Reading and purging `audit_events` (writing is `Audit.record` in events.ts, inside the caller's transaction). */
import { type Selectable, sql } from 'kysely';
import { engineOf } from '../db/engine.ts';
import type { AuditEventsTable } from '../db/schema.ts';
import type { Db } from '../db/tx.ts';
import { withTx } from '../db/tx.ts';

export interface AuditFilter {
  types?: string[];
  actor?: string;
  actorKind?: string;
  target?: string;
  targetKind?: string;
  since?: Date;
  until?: Date;
  /** Keyset position: rows with a smaller id (newest first). */
  beforeId?: number;
  limit: number;
}

export type StoredAuditEvent = Selectable<AuditEventsTable>;

/** Newest first. */
export async function listAuditEvents(db: Db, f: AuditFilter): Promise<StoredAuditEvent[]> {
  let q = db.selectFrom('audit_events').selectAll();
  if (f.types?.length) q = q.where('type', 'in', f.types);
  if (f.actor !== undefined) q = q.where('actor_id', '=', f.actor);
  if (f.actorKind !== undefined) q = q.where('actor_kind', '=', f.actorKind);
  if (f.target !== undefined) q = q.where('target_id', '=', f.target);
  if (f.targetKind !== undefined) q = q.where('target_kind', '=', f.targetKind);
  if (f.since) q = q.where('time', '>=', f.since);
  if (f.until) q = q.where('time', '<', f.until);
  if (f.beforeId !== undefined) q = q.where('id', '<', f.beforeId);
  return (await q.orderBy('id', 'desc').limit(f.limit).execute()) as StoredAuditEvent[];
}

/**
 * Deletes events older than `olderThan`, `batchSize` rows per transaction, at most `limit` rows per
 * call. Returns the number deleted and whether rows may remain.
 */
export async function purgeAuditEvents(
  db: Db,
  o: { olderThan: Date; batchSize: number; limit: number },
): Promise<{ deleted: number; more: boolean }> {
  let deleted = 0;
  for (;;) {
    const n = await withTx(db, async (trx) => {
      // The append-only trigger lets this transaction delete (CockroachDB has no such trigger).
      if (engineOf(trx) === 'postgres') await sql`select set_config('gatehouse.audit_purge', 'on', true)`.execute(trx);
      const r = await sql`delete from audit_events where id in (
          select id from audit_events where time < ${o.olderThan} order by id limit ${o.batchSize})`.execute(trx);
      return Number(r.numAffectedRows ?? 0);
    });
    deleted += n;
    if (n < o.batchSize) return { deleted, more: false };
    if (deleted >= o.limit) return { deleted, more: true };
  }
}
