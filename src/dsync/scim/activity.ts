/**
 * What a directory's SCIM endpoint last received, for the setup page's connection panel: the last
 * authenticated request (method, resource type, status) and the last one refused with an error
 * (status and the SCIM error's detail). Written to dsync_scim_activity (sql/0300) at most once per
 * `everyMs` per directory and process, after the answer is ready and without delaying it; a write
 * that fails is logged and dropped (the panel is informative, the request already succeeded).
 */
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Db } from '../tables.ts';

export interface ScimActivityNote {
  directoryId: string;
  method: string;
  resource: string;
  status: number;
  /** The SCIM error's detail when the request was refused (status ≥ 400). */
  error?: string | undefined;
}

export interface ScimActivity {
  note(n: ScimActivityNote): void;
}

/** Directories whose last write time this process remembers (the oldest go first). */
const REMEMBERED = 10_000;

export function createScimActivity(o: {
  db: Db;
  clock: Clock;
  log?: Logger | undefined;
  everyMs?: number;
}): ScimActivity {
  const everyMs = o.everyMs ?? 5000;
  const last = new Map<string, { at: number; errorAt: number }>();

  function write(n: ScimActivityNote, now: Date, withError: boolean): void {
    const values = {
      directory_id: n.directoryId,
      last_request_at: now,
      last_method: n.method.slice(0, 16),
      last_resource: n.resource.slice(0, 64),
      last_status: n.status,
      ...(withError
        ? { last_error_at: now, last_error_status: n.status, last_error: (n.error ?? '').slice(0, 500) }
        : {}),
    };
    const { directory_id: _d, ...update } = values;
    void o.db
      .insertInto('dsync_scim_activity')
      .values(values)
      .onConflict((oc) => oc.column('directory_id').doUpdateSet(update))
      .execute()
      .then(
        () => undefined,
        // The directory was deleted meanwhile (foreign key), or the database is away: nothing to keep.
        (e: unknown) => o.log?.debug({ err: e, directoryId: n.directoryId }, 'SCIM activity not recorded'),
      );
  }

  return {
    note(n) {
      const now = o.clock.now();
      const t = now.getTime();
      const seen = last.get(n.directoryId) ?? { at: -Infinity, errorAt: -Infinity };
      const isError = n.status >= 400;
      const due = t - seen.at >= everyMs;
      const errorDue = isError && t - seen.errorAt >= everyMs;
      if (!due && !errorDue) return;
      last.delete(n.directoryId);
      if (last.size >= REMEMBERED) last.delete(last.keys().next().value as string);
      last.set(n.directoryId, { at: t, errorAt: errorDue ? t : seen.errorAt });
      write(n, now, errorDue);
    },
  };
}
