/**
 * A directory's sync health, for the console: events per hour over the last day, what waits for
 * delivery (how many, since when), how long deliveries took in the last hour, and what failed
 * (delivery jobs out of attempts; logged failures of the last day when the directory logs its
 * deliveries). Each figure is one indexed query bounded by time or by the directory.
 */
import { sql } from 'kysely';
import type { Clock } from '../core/clock.ts';
import { countFailedJobs } from '../core/jobs/admin.ts';
import { deliveryQueue } from './events/service.ts';
import type { Db } from './tables.ts';

export interface DirectoryHealth {
  /** 24 counts, oldest hour first; the last is the current hour. */
  eventsPerHour: number[];
  undelivered: number;
  oldestUndelivered: Date | undefined;
  /** Median and 95th percentile (ms) of event-to-delivery times of the last hour; undefined without deliveries. */
  latencyMs: { p50: number; p95: number; delivered: number } | undefined;
  failedJobs: number;
  failedDeliveriesLastDay: number;
}

const HOUR = 3_600_000;

export function createHealthService(o: { db: Db; clock: Clock; queueDb: Db }) {
  async function health(directoryId: string): Promise<DirectoryHealth> {
    const now = o.clock.now().getTime();
    const end = Math.floor(now / HOUR) * HOUR + HOUR;
    const since = new Date(end - 24 * HOUR);
    const [hours, waiting, latency, jobs, failed] = await Promise.all([
      sql<{ h: number; n: number }>`
        select floor(extract(epoch from created_at) * 1000 / ${HOUR})::bigint as h, count(*)::int as n
        from dsync_events where created_at >= ${since} and directory_id = ${directoryId}
        group by 1`.execute(o.db),
      sql<{ n: number; oldest: Date | null }>`
        select count(*)::int as n, min(created_at) as oldest from dsync_webhook_outbox
        where directory_id = ${directoryId}`.execute(o.db),
      sql<{ p50: number | null; p95: number | null; n: number }>`
        select percentile_cont(0.5) within group (order by extract(epoch from delivered_at - created_at) * 1000) as p50,
          percentile_cont(0.95) within group (order by extract(epoch from delivered_at - created_at) * 1000) as p95,
          count(*)::int as n
        from dsync_events
        where created_at >= ${new Date(now - 2 * HOUR)} and directory_id = ${directoryId}
          and delivered_at >= ${new Date(now - HOUR)}`.execute(o.db),
      countFailedJobs(o.queueDb, { queue: deliveryQueue(directoryId) }),
      sql<{ n: number }>`
        select count(*)::int as n from dsync_webhook_logs
        where directory_id = ${directoryId} and created_at >= ${since} and delivered = false and status is distinct from 'pending'`.execute(
        o.db,
      ),
    ]);
    const eventsPerHour = Array.from({ length: 24 }, () => 0);
    const first = Math.floor(since.getTime() / HOUR);
    for (const r of hours.rows) {
      const i = Number(r.h) - first;
      if (i >= 0 && i < 24) eventsPerHour[i] = Number(r.n);
    }
    const w = waiting.rows[0];
    const l = latency.rows[0];
    return {
      eventsPerHour,
      undelivered: Number(w?.n ?? 0),
      oldestUndelivered: w?.oldest ?? undefined,
      latencyMs:
        l && l.n > 0 && l.p50 !== null && l.p95 !== null
          ? { p50: Math.round(Number(l.p50)), p95: Math.round(Number(l.p95)), delivered: Number(l.n) }
          : undefined,
      failedJobs: jobs,
      failedDeliveriesLastDay: Number(failed.rows[0]?.n ?? 0),
    };
  }
  return { health };
}
