/**
 * Directory-sync events: the one place they are written, and so the one place their delivery is
 * decided. A change (SCIM request, cloud sync) collects its DirectorySyncEvents in an EventBatch
 * while it runs; `persistEvents` writes them to `dsync_events` at the end of the change's
 * transaction, with a per-directory sequence number taken under the directory's row lock (held from
 * there to the commit only), and in the same transaction
 * queues their delivery:
 * - directory without webhook endpoint or secret: nothing (Jackson drops the event);
 * - batch mode (`dsync.webhook_batch_size` > 0): an outbox row for the batch processor;
 * - otherwise: an outbox row, and the directory's sender job (`webhook_deliver`, queue
 *   `dsync:<directory id>`) enqueued when it has none on its way (see delivery.ts). Whether it has
 *   one is read from `dsync_webhook_senders` in the data database, never from the job queue, so
 *   the same code runs with the queue in another database (`queue.dsn`: jobs go through the
 *   outbox, src/core/jobs/queue.ts).
 * No event and no delivery exist for a change that rolled back; no committed change lacks them.
 * Callbacks (`requests.handle(request, callback)`) are called by the caller after the commit,
 * with the same objects that are delivered (`batch.events` after `persistEvents`).
 */
import { randomUUID } from 'node:crypto';
import type { Executor } from '../../core/db/tx.ts';
import { type EventRow, writeEvents } from '../store/events.ts';
import { claimSender, senderJobKey } from '../store/outbox.ts';
import type { DsyncJobs } from '../tasks.ts';
import type {
  Directory,
  DirectorySyncEvent,
  DirectorySyncEventType,
  DsyncGroup,
  DsyncUser,
  WebhookEvent,
} from '../types.ts';
import { envelope, wireEvent } from './payload.ts';
import { hasWebhook } from './webhook.ts';

export const DELIVER_TASK = 'webhook_deliver' as const;
export const PROCESS_TASK = 'dsync_process_events' as const;
/** The one job key (and named queue) of batch processing runs. */
export const PROCESS_KEY = 'dsync:process-events';
export const deliveryQueue = (directoryId: string) => `dsync:${directoryId}`;

/** How events are delivered, from configuration (see createDsyncServices). */
export interface DeliveryPolicy {
  /** `dsync.webhook_batch_size` > 0: queue for the batch processor instead of a job per event. */
  batchMode: boolean;
  /** `dsync.webhook_batch_cron_interval` in ms (0: batches only when asked for). */
  batchIntervalMs: number;
  /** `dsync.webhook.max_attempts` of each delivery job. */
  maxAttempts: number;
  now(): Date;
  /** Where the transaction's jobs go. */
  jobs: DsyncJobs;
  /**
   * false: the events are written (events API, callbacks) but no webhook delivery is queued. Set
   * when a library caller's callback is the event sink (Jackson's `dsync.callback` replaces
   * webhooks). Default true.
   */
  webhooks?: boolean;
}

export interface EventBatch {
  readonly directory: Directory;
  readonly policy: DeliveryPolicy;
  /** The events collected so far (Jackson's envelope). */
  readonly pending: DirectorySyncEvent[];
  /** After `persistEvents`: the events as delivered, in order. */
  readonly events: WebhookEvent[];
  add(type: DirectorySyncEventType, subject: { user?: DsyncUser; group?: DsyncGroup; userId?: string }): void;
}

function eventBatch(directory: Directory, policy: DeliveryPolicy): EventBatch {
  const pending: DirectorySyncEvent[] = [];
  return {
    directory,
    policy,
    pending,
    events: [],
    add(type, subject) {
      // Snapshot: later changes in the same request must not alter an event already produced.
      pending.push(structuredClone(envelope(type, directory, subject)));
    },
  };
}

/** The directory was deleted or deactivated by a transaction that committed while this change ran. */
export class DirectoryUnavailable extends Error {
  override name = 'DirectoryUnavailable';
  readonly reason: 'deleted' | 'deactivated';
  constructor(reason: 'deleted' | 'deactivated') {
    super(`directory ${reason}`);
    this.reason = reason;
  }
}

/**
 * Writes the batch's events and queues their delivery, as the last writes of the change's
 * transaction: one statement for the events and their outbox rows (store/events.ts writeEvents;
 * the sequence numbers are taken with the directory row lock, then held only until the commit, so
 * the sequence is gap-free and follows commit order while the change itself ran without it), one
 * for the directory's sender in real-time mode.
 * @throws DirectoryUnavailable (the transaction must roll back)
 */
async function persistEvents(trx: Executor, batch: EventBatch): Promise<void> {
  const n = batch.pending.length;
  if (!n) return;
  const directory = batch.directory;
  const policy = batch.policy;
  const createdAt = policy.now();
  const events = batch.pending.map((payload) => ({ id: randomUUID(), event: payload.event, payload }));
  // An embedder's callback as the event sink (policy.webhooks false) means no webhook for these events.
  const delivered = policy.webhooks !== false && hasWebhook(directory);
  const outbox = !delivered ? 'none' : policy.batchMode ? 'batch' : 'realtime';
  const written = await writeEvents(trx, {
    directoryId: directory.id,
    events,
    createdAt,
    outbox,
  });
  if (!written) throw new DirectoryUnavailable('deleted');
  if (written.deactivated) throw new DirectoryUnavailable('deactivated');
  if (outbox === 'realtime') {
    const senderId = randomUUID();
    if (await claimSender(trx, directory.id, senderId))
      await enqueueSender(policy.jobs, trx, directory.id, senderId, policy.maxAttempts);
  }
  const rows: EventRow[] = events.map((e, i) => ({
    ...e,
    directoryId: directory.id,
    seq: written.before + 1 + i,
    createdAt,
  }));
  batch.events.push(...rows.map(wireEvent));
  if (outbox === 'batch') await ensureBatchTimer(trx, policy);
}

/**
 * Batch mode's interval timer runs while there is work: the first queued event of a transaction
 * starts it (in that transaction). Nothing without the interval (`dsync.webhook_batch_cron_interval` 0).
 */
export async function ensureBatchTimer(trx: Executor, policy: DeliveryPolicy): Promise<void> {
  if (policy.batchIntervalMs <= 0) return;
  const runAt = new Date(policy.now().getTime() + policy.batchIntervalMs);
  await policy.jobs.ensure(trx, PROCESS_TASK, { trigger: 'timer' }, { ...PROCESS_SPEC, runAt });
}

/**
 * Runs a change of the directory with a fresh event batch, then persists the batch's events in the
 * same transaction, last (see persistEvents). Returns the change's value and the
 * events as delivered, for the caller's callbacks after the commit.
 */
export async function withEvents<T>(
  trx: Executor,
  directory: Directory,
  policy: DeliveryPolicy,
  change: (batch: EventBatch) => Promise<T>,
): Promise<{ value: T; events: WebhookEvent[] }> {
  const batch = eventBatch(directory, policy);
  const value = await change(batch);
  await persistEvents(trx, batch);
  return { value, events: batch.events };
}

const PROCESS_SPEC = { jobKey: PROCESS_KEY, queueName: PROCESS_KEY, maxAttempts: 5 };

/** Makes sure a batch processing run happens no later than `runAt`. */
export async function scheduleProcessing(
  jobs: DsyncJobs,
  exec: Executor,
  runAt: Date,
  trigger: 'api' | 'timer' | 'retry',
) {
  await jobs.schedule(exec, PROCESS_TASK, { trigger }, { ...PROCESS_SPEC, runAt });
}

/** Enqueues the job of the directory's sender `senderId` (its queue runs one sender at a time). */
export function enqueueSender(
  jobs: DsyncJobs,
  exec: Executor,
  directoryId: string,
  senderId: string,
  maxAttempts: number,
): Promise<void> {
  return jobs.add(
    exec,
    DELIVER_TASK,
    { directoryId, senderId },
    { queueName: deliveryQueue(directoryId), maxAttempts, jobKey: senderJobKey(senderId) },
  );
}
