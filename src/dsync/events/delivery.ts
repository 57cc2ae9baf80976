/**
 * Real-time delivery: the work of a `webhook_deliver` job. Every event queued in real-time mode has
 * an outbox row naming the job responsible for it (at first, the job enqueued with it). Jobs of a
 * directory share the graphile-worker queue `dsync:<directory id>`, so at most one runs at a time;
 * but graphile-worker lets a later job of a queue run while an earlier one waits out its backoff,
 * so ordering is kept here:
 *
 *   - a job whose rows sit behind an earlier undelivered event whose job will still run hands its
 *     rows to that job and completes (that job delivers them, after its own, in order);
 *   - otherwise the job takes every undelivered event of the directory and POSTs them one by one
 *     in `seq` order. A failure before any success throws: graphile-worker retries the job with
 *     backoff, and the job keeps its rows (a failure after some successes hands the rest to a
 *     fresh job instead, so progress never uses up attempts). A job out of attempts stays failed with its rows; `jobs retry` (or the next
 *     event of the directory, whose job then takes over) delivers them later, still in order.
 *
 * A delivered event's row is deleted in the same statement batch that stamps `delivered_at`, so
 * no event is sent again after a success is recorded (a worker killed between the receiver's 2xx
 * and that write sends it again: receivers de-duplicate by `id`). A run delivers at most
 * `maxPerRun` events, then passes the rest to a new job. A directory deleted, deactivated or left
 * without webhook at delivery time: its undelivered events are dropped (logged at info).
 */
import { type Executor, withTx } from '../../core/db/tx.ts';
import { enqueue, isJobPending, missingJobs } from '../../core/jobs/enqueue.ts';
import { metrics } from '../../core/observability/metrics.ts';
import * as outbox from '../store/outbox.ts';
import { wireEvent } from './payload.ts';
import { DELIVER_TASK, deliveryQueue } from './service.ts';
import { postWebhook, type SenderOptions, undeliverable } from './webhook.ts';

export interface DeliveryOptions extends SenderOptions {
  maxAttempts: number;
  /** Events one job run delivers before handing the rest to a new job. */
  maxPerRun?: number;
}

export interface DeliverJob {
  id: number;
  /** This attempt's number (1 for the first). */
  attempt: number;
}

export type DeliverOutcome =
  | { kind: 'nothing' }
  | { kind: 'handed'; to: number; events: number }
  | { kind: 'dropped'; events: number; reason: string }
  | { kind: 'delivered'; events: number; continuedBy?: number };

/** Thrown when an attempt is not delivered: graphile-worker records the message and retries. */
export class DeliveryFailed extends Error {
  override name = 'DeliveryFailed';
}

export function createDeliveryService(o: DeliveryOptions) {
  const maxPerRun = o.maxPerRun ?? 100;

  /** Decides, under the directory's realtime lock, whether this job delivers, hands over or has nothing. */
  async function claim(directoryId: string, jobId: number, eventId: string) {
    // While a job runs no other job of its directory runs (one named queue), and rows move only
    // to the running job, to a waiting head job or to a new job: a job that owns nothing when it
    // starts never will. So the common case (an earlier job already delivered this job's event)
    // costs one query.
    const state = await outbox.realtimeJobState(o.db, directoryId, jobId, eventId);
    if (!state.owns) return { kind: 'nothing' as const, eventExists: state.eventExists };
    return withTx(o.db, async (trx) => {
      await outbox.lockRealtime(trx, directoryId);
      if (!(await outbox.ownsRealtime(trx, directoryId, jobId))) return { kind: 'nothing' as const, eventExists: true };
      const head = await outbox.realtimeHead(trx, directoryId);
      if (head?.jobId != null && head.jobId !== jobId && (await isJobPending(trx, head.jobId))) {
        const events = await outbox.reassignRealtime(trx, directoryId, jobId, head.jobId);
        return { kind: 'handed' as const, to: head.jobId, events };
      }
      await outbox.reassignRealtime(trx, directoryId, 'all', jobId);
      return { kind: 'mine' as const };
    });
  }

  async function deliver(p: { directoryId: string; eventId: string }, job: DeliverJob): Promise<DeliverOutcome> {
    const c = await claim(p.directoryId, job.id, p.eventId);
    if (c.kind === 'nothing') {
      // The event is gone only with its directory (its undelivered events went with it).
      if (!c.eventExists)
        o.log.info({ directoryId: p.directoryId, reason: 'directory deleted' }, 'webhook events dropped');
      return { kind: 'nothing' };
    }
    if (c.kind === 'handed') {
      o.log.debug({ directoryId: p.directoryId, job: job.id, to: c.to }, 'webhook events handed to an earlier job');
      return c;
    }
    const directory = await o.directories.load(p.directoryId);
    const reason = undeliverable(directory);
    if (reason || !directory) {
      const events = await outbox.dropQueued(o.db, p.directoryId, 'realtime', job.id);
      o.log.info({ directoryId: p.directoryId, events, reason }, 'webhook events dropped');
      return { kind: 'dropped', events, reason: reason ?? '' };
    }
    const target = directory.webhook;
    const rows = await outbox.queuedEvents(o.db, directory.id, 'realtime', maxPerRun + 1, job.id);
    let delivered = 0;
    for (const row of rows.slice(0, maxPerRun)) {
      const body = JSON.stringify(wireEvent(row));
      const a = await postWebhook(o.fetch, o.clock, target, body);
      if (a.delivered) metrics.webhookLatency.observe(Math.max(0, Date.now() - row.createdAt.getTime()) / 1000);
      if (directory.logWebhookEvents) await o.logs.record(o.db, directory.id, target.endpoint, body, a, job.attempt);
      if (!a.delivered) {
        const message = `webhook delivery of event ${row.id} (seq ${row.seq}) failed: ${a.error}`;
        if (!delivered) throw new DeliveryFailed(message);
        // This run made progress: the rest goes to a fresh job, so a receiver that fails now and
        // then never exhausts the attempts of a job that keeps delivering.
        o.log.warn({ directoryId: directory.id, delivered, error: a.error }, 'webhook delivery interrupted');
        return { kind: 'delivered', events: delivered, continuedBy: await handOn(directory.id, job.id, row.id) };
      }
      await outbox.markDelivered(o.db, [row.id], a.completedAt);
      delivered++;
    }
    const next = rows[maxPerRun];
    if (!next) return { kind: 'delivered', events: delivered };
    // More than one run's worth: a new job (same queue, so it runs after this one) takes the rest.
    return { kind: 'delivered', events: delivered, continuedBy: await handOn(directory.id, job.id, next.id) };
  }

  /** A new delivery job of the directory (its queue runs one job at a time), starting at this event. */
  const enqueueJob = (trx: Executor, directoryId: string, eventId: string) =>
    enqueue(
      trx,
      DELIVER_TASK,
      { directoryId, eventId },
      { queueName: deliveryQueue(directoryId), maxAttempts: o.maxAttempts },
    );

  /** Enqueues a new job for the directory and gives it this job's remaining rows. */
  async function handOn(directoryId: string, jobId: number, eventId: string): Promise<number> {
    return withTx(o.db, async (trx) => {
      const id = await enqueueJob(trx, directoryId, eventId);
      await outbox.reassignRealtime(trx, directoryId, jobId, id);
      return id;
    });
  }

  /**
   * Gives a job to undelivered realtime events whose job is gone (removed by hand with
   * `complete_jobs`/`remove_job`): the crontab's maintenance run calls this. Returns the new jobs.
   */
  async function repairOrphans(): Promise<number[]> {
    const owners = await outbox.realtimeOwners(o.db);
    const gone = new Set(await missingJobs(o.db, [...new Set(owners.map((x) => x.jobId))]));
    const byDirectory = new Map<string, number[] | null>();
    for (const x of owners)
      if (gone.has(x.jobId)) byDirectory.set(x.directoryId, [...(byDirectory.get(x.directoryId) ?? []), x.jobId]);
    for (const d of await outbox.unownedRealtime(o.db)) if (!byDirectory.has(d)) byDirectory.set(d, null);
    const created: number[] = [];
    for (const [directoryId, jobIds] of byDirectory) {
      const id = await withTx(o.db, async (trx) => {
        await outbox.lockRealtime(trx, directoryId);
        const head = await outbox.realtimeHead(trx, directoryId);
        if (!head) return undefined;
        const jobId = await enqueueJob(trx, directoryId, head.eventId);
        await outbox.setRealtimeJob(trx, directoryId, jobIds, jobId);
        return jobId;
      });
      if (id !== undefined) created.push(id);
    }
    if (created.length) o.log.warn({ jobs: created.length }, 'webhook events without a delivery job were given one');
    return created;
  }

  return { deliver, repairOrphans };
}

export type DeliveryService = ReturnType<typeof createDeliveryService>;
