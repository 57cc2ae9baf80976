/**
 * What directory sync needs from the process, and nothing more: the composition root
 * (src/container.ts) builds this and hands it to `createDsync`. The domain never sees the pool,
 * the embedded database, the process's `close()` or the OAuth 2.0 side's outbound client.
 */
import type { Kysely } from 'kysely';
import type { Audit } from '../core/audit/events.ts';
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config/load.ts';
import type { ChangeFeed } from '../core/db/changes.ts';
import type { JobQueue } from '../core/jobs/queue.ts';
import type { Logger } from '../core/log.ts';
import type { SafeFetch } from '../core/safe-fetch.ts';
import type { Database } from './tables.ts';

export interface DsyncDeps {
  /** `dsync.*`, the system secrets (sealing at rest) and the cookie settings of the Google routes. */
  config: Pick<Config, 'dsync' | 'secrets' | 'serve' | 'dev'>;
  log: Logger;
  clock: Clock;
  db: Kysely<Database>;
  /** Where transactions' jobs go: graphile-worker in `db`, or the outbox when `queue.dsn` is set. */
  queue: JobQueue;
  /** The domain's guarded outbound client (`dsync.disallow_private_ip_ranges`): webhooks, Google APIs. */
  fetch: SafeFetch;
  /** Change notifications (LISTEN/NOTIFY) that drop the in-memory directory cache. */
  changes: ChangeFeed;
  /** Records audit events (rows in the caller's transaction with `audit.enabled`). */
  audit: Audit;
}
