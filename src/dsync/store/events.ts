/** dsync_events: the DirectorySyncEvents written with each change, in commit order per directory. */
import type { Executor } from '../../core/db/tx.ts';
import type { DirectorySyncEvent } from '../types.ts';

export interface EventRow {
  id: string;
  directoryId: string;
  seq: number;
  event: string;
  payload: DirectorySyncEvent;
  createdAt: Date;
}

export async function insertEvents(db: Executor, rows: EventRow[]): Promise<void> {
  if (!rows.length) return;
  await db
    .insertInto('dsync_events')
    .values(
      rows.map((r) => ({
        id: r.id,
        directory_id: r.directoryId,
        seq: r.seq,
        event: r.event,
        payload: JSON.stringify(r.payload),
        created_at: r.createdAt,
      })),
    )
    .execute();
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
