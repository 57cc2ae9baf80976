/**
 * The events API (pull, with a cursor; Jackson has none, WorkOS has one): the committed events of
 * a directory, or of every directory of a tenant+product, in per-directory order, after an opaque
 * cursor. An application can catch up after downtime or replace webhooks with it.
 *
 * Why the cursor never skips an event committed late: each directory's events carry `seq`, handed
 * out by a counter on the directory row that the writing transaction updates (store/directories.ts
 * allocateEventSeq). The update holds the row until the transaction ends, so the numbers are
 * gap-free (a rollback gives its numbers back) and a number is only handed out after the previous
 * holder committed: the committed events are always a prefix 1..k. On top of that the reader only
 * returns a contiguous run after the cursor (seq = cursor+1, +2, …) and stops at the first number
 * it cannot see. So even a writer that bypassed the counter and committed seq 8 before seq 7 would
 * not make the reader skip 7: it waits until 7 is visible. Numbers removed by the retention purge
 * are the only ones it steps over; the purge records, per directory, the highest number it deleted.
 *
 * The cursor is base64url JSON `{v: 1, p: {<directory id>: <last seq returned>}}`; callers must
 * treat it as opaque. Directories absent from it start at the beginning.
 */
import { sql } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { DirectoriesService } from '../directories/service.ts';
import { dsyncError } from '../errors.ts';
import { listDirectories } from '../store/directories.ts';
import { type EventRow, listEvents } from '../store/events.ts';
import type { Db } from '../tables.ts';
import type { ScopeQuery, WebhookEvent } from '../types.ts';
import { wireEvent } from './payload.ts';

export interface EventPage {
  /** The events, as webhooks deliver them (Jackson's fields, then `id`, `seq`, `created_at`). */
  data: WebhookEvent[];
  /** Pass it back as `after` to continue; it is returned even when `data` is empty. */
  cursor: string;
  /** More events are available now. */
  has_more: boolean;
}

export const MAX_EVENTS_PAGE = 500;
/** Events deleted per statement by the purge, and statements per run before it re-enqueues itself. */
export const EVENTS_PURGE_BATCH = 1000;
export const EVENTS_PURGE_BATCHES_PER_RUN = 50;
/** Directories a tenant+product feed reads at most. */
const MAX_DIRECTORIES = 1000;

type Positions = Record<string, number>;

export function encodeCursor(p: Positions): string {
  return Buffer.from(JSON.stringify({ v: 1, p })).toString('base64url');
}

export function decodeCursor(after: unknown): Positions {
  if (after === undefined || after === null || after === '') return {};
  const invalid = () => dsyncError(400, 'Invalid cursor.');
  if (typeof after !== 'string' || after.length > 100_000) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const p = (parsed as { v?: unknown; p?: unknown })?.p;
  if ((parsed as { v?: unknown })?.v !== 1 || typeof p !== 'object' || p === null || Array.isArray(p)) throw invalid();
  const out: Positions = {};
  for (const [k, v] of Object.entries(p)) {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw invalid();
    out[k] = v;
  }
  return out;
}

function pageSize(limit: unknown, def: number): number {
  const n = typeof limit === 'string' ? Number.parseInt(limit, 10) : typeof limit === 'number' ? limit : Number.NaN;
  if (!Number.isInteger(n) || n <= 0) return def;
  return Math.min(n, MAX_EVENTS_PAGE);
}

export function createEventFeedService(o: {
  db: Db;
  clock: Clock;
  directories: DirectoriesService;
  retentionMs: number;
  pageLimit?: number;
}) {
  /** The highest seq the retention purge deleted, per directory. */
  async function purgedUpTo(ids: string[]): Promise<Map<string, number>> {
    if (!ids.length) return new Map();
    const rows = await o.db
      .selectFrom('dsync_events_purged')
      .select(['directory_id', 'seq'])
      .where('directory_id', 'in', ids)
      .execute();
    return new Map(rows.map((r) => [r.directory_id, Number(r.seq)]));
  }

  /** The contiguous run of committed events after `after` (at most `limit + 1`, to tell `has_more`). */
  async function run(directoryId: string, after: number, purged: number, limit: number): Promise<EventRow[]> {
    const from = Math.max(after, purged);
    const rows = await listEvents(o.db, directoryId, from, limit + 1);
    const out: EventRow[] = [];
    let expected = from + 1;
    for (const r of rows) {
      if (r.seq !== expected) break;
      out.push(r);
      expected++;
    }
    return out;
  }

  /**
   * One page. `q`: `directoryId`, or `tenant` and `product` (all their directories, merged by
   * time, each directory's events in order). 404 for an unknown directory.
   */
  async function list(q: ScopeQuery, after?: unknown, limit?: unknown): Promise<EventPage> {
    const n = pageSize(limit, o.pageLimit ?? 50);
    const positions = decodeCursor(after);
    let ids: string[];
    if (typeof q.directoryId === 'string' && q.directoryId !== '') {
      const d = await o.directories.load(q.directoryId);
      if (!d) throw dsyncError(404, 'Directory configuration not found.');
      ids = [d.id];
    } else if (typeof q.tenant === 'string' && q.tenant && typeof q.product === 'string' && q.product) {
      const rows = await listDirectories(o.db, { tenant: q.tenant, product: q.product, limit: MAX_DIRECTORIES });
      ids = rows.map((r) => r.id).sort();
    } else {
      throw dsyncError(400, 'Please provide tenant and product, or directoryId.');
    }
    const purged = await purgedUpTo(ids);
    const runs = await Promise.all(ids.map((id) => run(id, positions[id] ?? 0, purged.get(id) ?? 0, n)));
    // Merge by creation time; ties and order inside a directory by seq (each run is in seq order).
    const heads = runs.map(() => 0);
    const picked: EventRow[] = [];
    while (picked.length < n) {
      let best = -1;
      for (let i = 0; i < runs.length; i++) {
        const r = runs[i]?.[heads[i] as number];
        if (!r) continue;
        const b = best >= 0 ? runs[best]?.[heads[best] as number] : undefined;
        if (!b || r.createdAt.getTime() < b.createdAt.getTime()) best = i;
      }
      if (best < 0) break;
      picked.push(runs[best]?.[heads[best] as number] as EventRow);
      heads[best] = (heads[best] as number) + 1;
    }
    const next: Positions = {};
    for (const id of ids) next[id] = Math.max(positions[id] ?? 0, purged.get(id) ?? 0);
    for (const r of picked) next[r.directoryId] = r.seq;
    const hasMore = runs.some((r, i) => (r.length ?? 0) > (heads[i] as number));
    return { data: picked.map(wireEvent), cursor: encodeCursor(next), has_more: hasMore };
  }

  /**
   * Retention: deletes events older than `dsync.events.retention` that come before the
   * directory's oldest event still waiting for its webhook (delivered outbox rows are already gone:
   * delivery deletes them), in bounded batches, and records per directory the highest seq
   * deleted. Returns how many, and whether more remain.
   */
  async function purge(): Promise<{ deleted: number; more: boolean }> {
    const before = new Date(o.clock.now().getTime() - o.retentionMs);
    let deleted = 0;
    for (let i = 0; i < EVENTS_PURGE_BATCHES_PER_RUN; i++) {
      const { rows } = await sql<{ n: number }>`
        with gone as (
          delete from dsync_events e
          where e.id in (
            select id from dsync_events x
            where x.created_at < ${before}
              -- below the directory's oldest event still waiting for its webhook (so the purged
              -- numbers are a prefix: the reader may step over them)
              and x.seq < coalesce(
                (select min(ob.seq) from dsync_webhook_outbox ob where ob.directory_id = x.directory_id),
                9223372036854775807)
            order by x.created_at
            limit ${EVENTS_PURGE_BATCH}
          )
          returning e.directory_id, e.seq
        ), marks as (
          insert into dsync_events_purged (directory_id, seq)
          select g.directory_id, max(g.seq) from gone g
          where exists (select 1 from dsync_directories d where d.id = g.directory_id)
          group by g.directory_id
          on conflict (directory_id) do update set seq = greatest(dsync_events_purged.seq, excluded.seq)
        )
        select count(*)::int as n from gone`.execute(o.db);
      const n = rows[0]?.n ?? 0;
      deleted += n;
      if (n < EVENTS_PURGE_BATCH) return { deleted, more: false };
    }
    return { deleted, more: true };
  }

  return { list, purge };
}

export type EventFeedService = ReturnType<typeof createEventFeedService>;
