/**
 * `POST /api/v1/dsync/webhooks/retry` (and the library's `webhooks.retry`): re-enqueues failed
 * deliveries now, with a fresh attempt budget: dead `webhook_deliver` jobs (of one directory, or
 * all, the lifecycle webhook's too), and batch mode's waiting directories (their backoff ends and
 * a processing run is scheduled). The same as `gatehouse jobs retry --task webhook_deliver`.
 */
import { retryFailedJobs } from '../../core/jobs/admin.ts';
import type { DirectoriesService } from '../directories/service.ts';
import type { Db } from '../tables.ts';
import type { BatchService } from './batch.ts';
import { LIFECYCLE_TASK } from './lifecycle.ts';
import { DELIVER_TASK, deliveryQueue } from './service.ts';

export interface RetryReport {
  /** Failed jobs re-enqueued. */
  jobs: number;
  /** Batch-mode directories whose backoff was ended. */
  batches: number;
}

/** `queueDb`: the queue database, where failed jobs are (the data database unless `queue.dsn` is set). */
export function createRetryService(o: { queueDb: Db; directories: DirectoriesService; batch: BatchService }) {
  async function retry(directoryId?: unknown): Promise<RetryReport> {
    if (directoryId !== undefined && directoryId !== '') {
      const d = await o.directories.get(directoryId); // 404 for an unknown directory
      const jobs = await retryFailedJobs(o.queueDb, { task: DELIVER_TASK, queue: deliveryQueue(d.id) });
      return { jobs: jobs.length, batches: await o.batch.retryNow(d.id) };
    }
    const jobs = [
      ...(await retryFailedJobs(o.queueDb, { task: DELIVER_TASK })),
      ...(await retryFailedJobs(o.queueDb, { task: LIFECYCLE_TASK })),
    ];
    return { jobs: jobs.length, batches: await o.batch.retryNow() };
  }
  return { retry };
}

export type RetryService = ReturnType<typeof createRetryService>;
