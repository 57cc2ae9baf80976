/**
 * Directory-sync events. A SCIM change collects its DirectorySyncEvents while it runs and writes
 * them to `dsync_events` in the same transaction, with a per-directory sequence number taken under
 * the directory's row lock: no event exists for a change that rolled back, no committed change
 * lacks its events, and `seq` follows commit order (what webhook delivery, issue #7, reads).
 * Callbacks (`requests.handle(request, callback)`) are called by the caller after the commit.
 */
import { randomUUID } from 'node:crypto';
import type { Executor } from '../../core/db/tx.ts';
import { allocateEventSeq } from '../store/directories.ts';
import { insertEvents } from '../store/events.ts';
import type { Directory, DirectorySyncEvent, DirectorySyncEventType, DsyncGroup, DsyncUser } from '../types.ts';
import { envelope } from './payload.ts';

export interface EventBatch {
  readonly directory: Directory;
  readonly events: DirectorySyncEvent[];
  add(type: DirectorySyncEventType, subject: { user?: DsyncUser; group?: DsyncGroup }): void;
}

export function eventBatch(directory: Directory): EventBatch {
  const events: DirectorySyncEvent[] = [];
  return {
    directory,
    events,
    add(type, subject) {
      // Snapshot: later changes in the same request must not alter an event already produced.
      events.push(structuredClone(envelope(type, directory, subject)));
    },
  };
}

/**
 * Writes the batch's events. The caller's transaction must hold the directory row lock
 * (store/directories.ts lockDirectory), which makes the sequence gap-free and commit-ordered.
 */
export async function persistEvents(trx: Executor, batch: EventBatch): Promise<void> {
  const n = batch.events.length;
  if (!n) return;
  const first = (await allocateEventSeq(trx, batch.directory.id, n)) + 1;
  await insertEvents(
    trx,
    batch.events.map((payload, i) => ({
      id: randomUUID(),
      directoryId: batch.directory.id,
      seq: first + i,
      event: payload.event,
      payload,
    })),
  );
}
