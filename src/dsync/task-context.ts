/**
 * What a directory-sync task file (tasks/dsync_*.ts, tasks/webhook_deliver.ts) may use; each picks
 * the part it needs (`Pick<DsyncTaskContext, …>`). The worker passes the process's container, which
 * has all of it. Only task files import this; nothing inside the domain does.
 */
import type { Kysely } from 'kysely';
import type { Audit } from '../core/audit/events.ts';
import type { Logger } from '../core/log.ts';
import type { Dsync } from './index.ts';
import type { Database } from './tables.ts';
import type { DsyncJobs } from './tasks.ts';

export interface DsyncTaskContext {
  dsync: Dsync;
  db: Kysely<Database>;
  log: Logger;
  jobs: DsyncJobs;
  audit: Audit;
}
