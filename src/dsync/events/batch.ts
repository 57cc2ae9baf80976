/**
 * Batch mode (Jackson's EventProcessor, with its bugs fixed). Events queued in
 * the outbox with mode 'batch' are sent per directory, oldest first, up to `dsync.webhook_batch_size`
 * per POST (50 when batch mode is off, as Jackson), as ONE signed JSON array.
 *
 * Per directory and batch, in one transaction (no serialization retry: the POST is not repeatable):
 * try the directory's batch advisory lock (another processor has it: skip it), check its backoff,
 * load the directory (missing, deactivated or without webhook: drop its queued events), read the
 * batch, POST it, then on any 2xx delete the rows and stamp them delivered, on anything else record
 * the failure and back off (attempts n → next try after min(e^n, 3600) s). The rows stay queued
 * until a 2xx; the lock makes concurrent processors skip a directory that is being sent, so no
 * batch goes out twice. A crash during the POST rolls the transaction back: the batch is sent
 * again later (receivers de-duplicate by event `id`). A directory's later events wait behind its
 * failed batch, so order is kept per directory.
 *
 * A run processes directories four at a time and stops after `maxPosts` POSTs or `budgetMs`;
 * the job (tasks/dsync_process_events.ts) then schedules the next run (see `nextRun`).
 */

import { metrics } from '../../core/observability/metrics.ts';
import * as outbox from '../store/outbox.ts';
import type { WebhookEvent } from '../types.ts';
import { wireEvent } from './payload.ts';
import type { SenderOptions } from './senders.ts';
import { PROCESS_KEY, scheduleProcessing } from './service.ts';
import { postWebhook, undeliverable } from './webhook.ts';

export interface BatchOptions extends SenderOptions {
  /** `dsync.webhook_batch_size` (0: batch mode off; a run still drains the queue, 50 at a time). */
  batchSize: number;
  /** `dsync.webhook_batch_cron_interval` in ms (0: no timer). */
  intervalMs: number;
}

/** Jackson's batch size when `process()` runs without one configured. */
export const DEFAULT_BATCH_SIZE = 50;
const PARALLEL_DIRECTORIES = 4;
const MAX_BACKOFF_S = 3600;

export const backoffSeconds = (attempts: number) => Math.min(MAX_BACKOFF_S, Math.exp(Math.min(attempts, 10)));

export interface RunReport {
  posts: number;
  delivered: number;
  failed: number;
  dropped: number;
  /** The run stopped on its budget with directories still due. */
  exhausted: boolean;
}

const emptyReport = (): RunReport => ({ posts: 0, delivered: 0, failed: 0, dropped: 0, exhausted: false });

type DirectoryOutcome = 'sent' | 'failed' | 'dropped' | 'skipped' | 'empty';

/** Jackson's queue record (`fetchNextBatch`), with the event as delivered. */
export interface QueueRecord {
  id: string;
  event: WebhookEvent;
  retry_count: number;
  status: 'PENDING' | 'FAILED';
  created_at: string;
}

/**
 * Batch mode: queued events are posted per directory in batches by one processing run at a time,
 * which schedules the next.
 * Long: the run, its scheduling and the retries share the run's key and the batch size.
 */
export function createBatchService(o: BatchOptions) {
  const size = o.batchSize > 0 ? o.batchSize : DEFAULT_BATCH_SIZE;

  /** One batch of one directory. */
  async function sendOne(directoryId: string): Promise<{ outcome: DirectoryOutcome; events: number }> {
    return o.db.transaction().execute(async (trx) => {
      if (!(await outbox.tryLockBatch(trx, directoryId))) return { outcome: 'skipped', events: 0 };
      const now = o.clock.now();
      const backoff = await outbox.getBackoff(trx, directoryId);
      if (backoff && backoff.nextAttemptAt > now) return { outcome: 'skipped', events: 0 };
      const d = await o.directories.load(directoryId, trx);
      const reason = undeliverable(d);
      if (reason || !d) {
        const events = await outbox.dropQueued(trx, directoryId, 'batch');
        await outbox.clearBackoff(trx, directoryId);
        o.log.info({ directoryId, events, reason }, 'queued webhook events dropped');
        return { outcome: 'dropped', events };
      }
      const rows = await outbox.queuedEvents(trx, directoryId, 'batch', size);
      if (!rows.length) return { outcome: 'empty', events: 0 };
      const body = JSON.stringify(rows.map(wireEvent));
      const attempt = (backoff?.attempts ?? 0) + 1;
      const a = await postWebhook(o.fetch, o.clock, d.webhook, body);
      if (d.logWebhookEvents) await o.logs.record(trx, d.id, d.webhook.endpoint, body, a, attempt);
      if (a.delivered) {
        for (const r of rows) metrics.webhookLatency.observe(Math.max(0, Date.now() - r.createdAt.getTime()) / 1000);
        await outbox.markDelivered(
          trx,
          rows.map((r) => r.id),
          a.completedAt,
        );
        if (backoff) await outbox.clearBackoff(trx, directoryId);
        return { outcome: 'sent', events: rows.length };
      }
      const next = new Date(a.completedAt.getTime() + backoffSeconds(attempt) * 1000);
      await outbox.setBackoff(
        trx,
        directoryId,
        { attempts: attempt, nextAttemptAt: next, lastError: a.error ?? '' },
        now,
      );
      o.log.warn(
        { directoryId, events: rows.length, attempt, status: a.status, error: a.error, retryAt: next.toISOString() },
        'webhook batch not delivered; it stays queued',
      );
      return { outcome: 'failed', events: rows.length };
    });
  }

  /** Processes due directories until the queue is drained, the budget is spent, or only backoff remains. */
  async function process(opts: { maxPosts?: number; budgetMs?: number } = {}): Promise<RunReport> {
    const maxPosts = opts.maxPosts ?? 500;
    const deadline = Date.now() + (opts.budgetMs ?? 30_000);
    const report = emptyReport();
    const spent = () => report.posts >= maxPosts || Date.now() >= deadline;
    // A directory is visited until it is empty, fails or is skipped; each is visited once per pass.
    const done = new Set<string>();
    for (;;) {
      const due = await outbox.dueBatchDirectories(o.db, o.clock.now(), 200, [...done]);
      if (!due.length) return report;
      if (spent()) {
        report.exhausted = true;
        return report;
      }
      const work = async (directoryId: string) => {
        for (;;) {
          if (spent()) return;
          const r = await sendOne(directoryId);
          if (r.outcome === 'sent' || r.outcome === 'failed') report.posts++;
          if (r.outcome === 'sent') report.delivered += r.events;
          if (r.outcome === 'failed') report.failed += r.events;
          if (r.outcome === 'dropped') report.dropped += r.events;
          if (r.outcome !== 'sent') {
            done.add(directoryId);
            return;
          }
        }
      };
      const queue = [...due];
      await Promise.all(
        Array.from({ length: Math.min(PARALLEL_DIRECTORIES, queue.length) }, async () => {
          for (let d = queue.shift(); d !== undefined; d = queue.shift()) await work(d);
        }),
      );
    }
  }

  /**
   * When the next run should happen after one: at once when the budget ran out with work due;
   * otherwise, while events are queued, after the interval (if set) or when the earliest backoff
   * ends, whichever is first. Nothing queued: no run (the next queued event starts the timer).
   */
  async function nextRun(last: RunReport): Promise<Date | undefined> {
    const now = o.clock.now();
    if (last.exhausted) return now;
    const state = await outbox.batchState(o.db);
    if (!state.queued) return undefined;
    const candidates: number[] = [];
    if (o.intervalMs > 0) candidates.push(now.getTime() + o.intervalMs);
    if (state.earliestRetry) candidates.push(Math.max(now.getTime(), state.earliestRetry.getTime()));
    return candidates.length ? new Date(Math.min(...candidates)) : undefined;
  }

  /** Runs once and schedules the next run (the task's body). */
  async function run(): Promise<RunReport> {
    let report = emptyReport();
    try {
      report = await process();
    } finally {
      const at = await nextRun(report);
      if (at) await scheduleProcessing(o.jobs, o.db, at, 'timer');
    }
    return report;
  }

  /** Asks for a run now (the v1 endpoint): answers at once, a worker does the work. */
  async function trigger(): Promise<void> {
    await scheduleProcessing(o.jobs, o.db, o.clock.now(), 'api');
  }

  /** Ends every backoff (or one directory's) and asks for a run now; returns how many directories waited. */
  async function retryNow(directoryId?: string): Promise<number> {
    const n = await outbox.clearBackoff(o.db, directoryId);
    const state = await outbox.batchState(o.db);
    if (state.queued) await scheduleProcessing(o.jobs, o.db, o.clock.now(), 'retry');
    return n;
  }

  /** Jackson's `fetchNextBatch(offset, limit)`: queued events across directories, oldest first. */
  async function fetchNextBatch(offset = 0, limit = DEFAULT_BATCH_SIZE): Promise<QueueRecord[]> {
    const rows = await outbox.batchQueue(o.db, Math.max(0, offset | 0), Math.min(Math.max(1, limit | 0), 1000));
    return rows.map((r) => ({
      id: r.id,
      event: wireEvent(r),
      retry_count: r.attempts,
      status: r.attempts > 0 ? 'FAILED' : 'PENDING',
      created_at: r.queuedAt.toISOString(),
    }));
  }

  /** The crontab's check: a queue with work and no scheduled run gets one. */
  async function ensureScheduled(): Promise<boolean> {
    const at = await nextRun(emptyReport());
    if (!at) return false;
    await scheduleProcessing(o.jobs, o.db, at, 'timer');
    return true;
  }

  return { process, run, nextRun, trigger, retryNow, fetchNextBatch, ensureScheduled, key: PROCESS_KEY };
}

export type BatchService = ReturnType<typeof createBatchService>;
