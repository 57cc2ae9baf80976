/**
 * The job slots of this process's graphile-worker runners: `concurrency` each, a slot taken from
 * the `job:start` event to the `job:complete` event of a job. A job that may wait for more work
 * before it ends (a directory's webhook sender lingering, src/dsync/events/delivery.ts) asks
 * `free()` so that it waits only while another slot of the process is idle and can take any job
 * that comes: its waiting then never delays another job. A runner shutting down has no free slot.
 */
import type { EventEmitter } from 'node:events';

interface RunnerSlots {
  concurrency: number;
  running: number;
  /** The tasks the runner fetches. */
  tasks: ReadonlySet<string>;
  pool?: { nudge(n: number): void };
  /** When `jobSlots.nudge` last woke one of its workers (performance.now()). */
  nudgedAt: number;
}

/**
 * `jobSlots.nudge` wakes a runner's idle worker at most this often. Each wake is a job fetch (a
 * query that locks queue rows); a sender that keeps up with steady traffic finds its queue empty,
 * and asks for a nudge, after almost every event, and fetches at that rate cost the database more
 * than the writes it delivers.
 */
const NUDGE_EVERY_MS = 50;

const runners = new Set<RunnerSlots>();

/** Whether the runner fetches `task` (every runner, without one). */
const runs = (r: RunnerSlots, task: string | undefined) => task === undefined || r.tasks.has(task);

export const jobSlots = {
  /**
   * Idle slots of this process's runners that still take jobs (0 without a runner); with `task`,
   * only of the runners that run it (a task in a lane of its own: runner.ts, WorkerLane).
   */
  free(task?: string): number {
    let n = 0;
    for (const r of runners) if (runs(r, task)) n += Math.max(0, r.concurrency - r.running);
    return n;
  },
  /**
   * Wakes one idle worker to look for jobs now. An idle slot may be one whose last fetch came back
   * empty while jobs waited (runner.ts): it looks again only on a job insert's NOTIFY or the poll
   * interval, so a job that means to keep its slot because another is idle wakes that one first.
   */
  nudge(task?: string): void {
    const now = performance.now();
    for (const r of runners)
      if (r.pool && r.running < r.concurrency && runs(r, task)) {
        if (now - r.nudgedAt < NUDGE_EVERY_MS) return;
        r.nudgedAt = now;
        wake(r);
        return;
      }
  },
};

/** Asks the runner's worker pool to let one idle worker look for a job now. */
function wake(r: RunnerSlots): void {
  try {
    r.pool?.nudge(1);
  } catch {
    // the pool is shutting down
  }
}

/**
 * Counts the slots of a runner of `tasks` from its `events` emitter (given to graphile-worker's `run`) until it
 * starts shutting down; the returned function forgets them (call it when the runner stops).
 * `wakeAfterCompleteMs`: after each completed job, one idle worker is woken that much later.
 * `wakeAfterStartMs`: after each started job, while a slot is left, one idle worker is woken that
 * much later (see runner.ts: the fetches of workers woken together can miss jobs that wait).
 */
export function trackJobSlots(
  events: EventEmitter,
  concurrency: number,
  tasks: readonly string[],
  o: { wakeAfterCompleteMs?: number; wakeAfterStartMs?: number } = {},
): () => void {
  const r: RunnerSlots = { concurrency, running: 0, tasks: new Set(tasks), nudgedAt: Number.NEGATIVE_INFINITY };
  runners.add(r);
  events.on('pool:create', ({ workerPool }: { workerPool: { nudge(n: number): void } }) => {
    r.pool = workerPool;
  });
  events.on('job:start', () => {
    r.running++;
    if (o.wakeAfterStartMs === undefined || r.running >= r.concurrency) return;
    setTimeout(() => wake(r), o.wakeAfterStartMs).unref();
  });
  events.on('job:complete', () => {
    r.running--;
    if (o.wakeAfterCompleteMs === undefined) return;
    setTimeout(() => wake(r), o.wakeAfterCompleteMs).unref();
  });
  const forget = () => runners.delete(r);
  events.on('pool:gracefulShutdown', forget);
  return forget;
}
