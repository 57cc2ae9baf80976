/** What the senders of directory events need (real-time delivery and batch mode). */
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { SafeFetch } from '../../core/safe-fetch.ts';
import type { DirectoriesService } from '../directories/service.ts';
import type { Db } from '../tables.ts';
import type { DsyncJobs } from '../tasks.ts';
import type { WebhookLogsService } from './logs.ts';

export interface SenderOptions {
  db: Db;
  /** Where jobs go (the data transaction, or the outbox with `queue.dsn`). */
  jobs: DsyncJobs;
  clock: Clock;
  log: Logger;
  fetch: SafeFetch;
  directories: DirectoriesService;
  logs: WebhookLogsService;
}
