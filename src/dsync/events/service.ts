import { senderJobKey } from '../store/outbox.ts';
import type { Executor } from '../tables.ts';
import type { DsyncJobs } from '../tasks.ts';

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
 * Batch mode's interval timer runs while there is work: the first queued event of a transaction
 * starts it (in that transaction). Nothing without the interval (`dsync.webhook_batch_cron_interval` 0).
 */
export async function ensureBatchTimer(trx: Executor, policy: DeliveryPolicy): Promise<void> {
  if (policy.batchIntervalMs <= 0) return;
  const runAt = new Date(policy.now().getTime() + policy.batchIntervalMs);
  await policy.jobs.ensure(trx, PROCESS_TASK, { trigger: 'timer' }, { ...PROCESS_SPEC, runAt });
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
