/**
 * Google Workspace sync as one service: the admin authorization (auth.ts), the sync of a directory
 * (sync.ts) and its scheduling through graphile-worker.
 *
 * Scheduling: the crontab runs `dsync_cloud_sync_sweep` every 10 minutes; the sweep enqueues one
 * `dsync_cloud_sync` job per active, authorized Google directory whose last run started more than
 * `dsync.google.sync_interval` ago (all of them when forced: `POST /api/v1/dsync/cron/sync-google`).
 * The job key is the directory's, in `unsafe_dedupe` mode: while a directory's job waits or runs, no
 * second one is added (graphile's `replace` and `preserve_run_at` modes would add one next to a
 * running job). A dead job would keep its key forever, so the sweep deletes dead jobs of the keys it
 * is about to add; sync failures caused by Google are results, not job failures, so they never die.
 */
import type { Clock } from '../../../core/clock.ts';
import type { KeyRing } from '../../../core/crypto/keys.ts';
import { withTx } from '../../../core/db/tx.ts';
import { removeDeadJobsByKey } from '../../../core/jobs/admin.ts';
import type { Logger } from '../../../core/log.ts';
import type { SafeFetch } from '../../../core/safe-fetch.ts';
import type { Applier } from '../../change/apply.ts';
import type { DirectoriesService } from '../../directories/service.ts';
import type { DeliveryPolicy } from '../../events/service.ts';
import { listSyncableDirectories } from '../../store/cloud-syncs.ts';
import type { Db } from '../../tables.ts';
import type { DsyncJobs } from '../../tasks.ts';
import { createGoogleAuth } from './auth.ts';
import { createGoogleClient } from './client.ts';
import type { AuthorizationLinks, AuthorizationVerifier } from './link.ts';
import { createGoogleSync, emptyCounts, type SyncOptions, type SyncResult } from './sync.ts';

export const SYNC_TASK = 'dsync_cloud_sync' as const;
export const SWEEP_TASK = 'dsync_cloud_sync_sweep' as const;
export const syncJobKey = (directoryId: string) => `${SYNC_TASK}:${directoryId}`;

export interface GoogleServiceOptions {
  db: Db;
  jobs: DsyncJobs;
  clock: Clock;
  log: Logger;
  directories: DirectoriesService;
  fetch: SafeFetch;
  /** keyRing(secrets.system, 'state') */
  stateRing: KeyRing;
  clientId: string;
  clientSecret: string;
  authUrl: string;
  tokenUrl: string;
  apiUrl: string;
  /** `dsync.external_url` + `dsync.google.callback_path` */
  redirectUri: string;
  /** `dsync.external_url` + `dsync.google.authorize_path` */
  authorizeUrl?: string;
  /** Mints and verifies authorization links (link.ts). */
  links?: AuthorizationLinks;
  /** Proofs accepted besides the links (e.g. setup-link tokens). */
  extraVerifiers?: readonly AuthorizationVerifier[];
  /** `dsync.google.sync_interval` in ms (0: no scheduled sync) */
  syncIntervalMs: number;
  /** How the events of a sync are delivered (webhooks; see events/service.ts). */
  delivery: DeliveryPolicy;
  /** Applies the sync's changes (change/apply.ts). */
  applier: Applier;
}

export function createGoogleService(o: GoogleServiceOptions) {
  const log = o.log.child({ component: 'dsync.google' });
  const client = createGoogleClient({
    fetch: o.fetch,
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    redirectUri: o.redirectUri,
    tokenUrl: o.tokenUrl,
    apiUrl: o.apiUrl.replace(/\/$/, ''),
  });
  const auth = createGoogleAuth({
    clock: o.clock,
    log,
    directories: o.directories,
    client,
    stateRing: o.stateRing,
    clientId: o.clientId,
    authUrl: o.authUrl,
    redirectUri: o.redirectUri,
    verifiers: [...(o.links ? [o.links.verify] : []), ...(o.extraVerifiers ?? [])],
    ...(o.links ? { links: o.links } : {}),
    ...(o.authorizeUrl ? { authorizeUrl: o.authorizeUrl } : {}),
  });
  const sync = createGoogleSync({
    db: o.db,
    clock: o.clock,
    log: o.log,
    directories: o.directories,
    client,
    tokens: auth.tokenSource,
    delivery: o.delivery,
    applier: o.applier,
  });

  /** Every syncable directory, in id order, a page at a time. */
  async function* syncable(dueBefore?: Date) {
    let after = '';
    for (;;) {
      const ids = await listSyncableDirectories(o.db, {
        afterId: after,
        limit: 500,
        ...(dueBefore ? { dueBefore } : {}),
      });
      if (!ids.length) return;
      after = ids[ids.length - 1] as string;
      yield ids;
    }
  }

  /**
   * The crontab sweep: enqueues a `dsync_cloud_sync` job per directory that is due (every
   * syncable directory with `force`). Returns how many directories it enqueued (or found queued).
   */
  async function sweep(p: { force?: boolean } = {}): Promise<number> {
    if (!p.force && o.syncIntervalMs <= 0) return 0;
    const dueBefore = p.force ? undefined : new Date(o.clock.now().getTime() - o.syncIntervalMs);
    let n = 0;
    for await (const ids of syncable(dueBefore)) {
      await withTx(o.db, async (trx) => {
        await removeDeadJobsByKey(o.jobs.queue.stateExec(trx), ids.map(syncJobKey));
        for (const directoryId of ids)
          await o.jobs.add(
            trx,
            SYNC_TASK,
            { directoryId },
            { jobKey: syncJobKey(directoryId), jobKeyMode: 'unsafe_dedupe', maxAttempts: 3 },
          );
      });
      n += ids.length;
    }
    if (n) log.info({ directories: n, force: p.force === true }, 'google sync sweep: directories enqueued');
    return n;
  }

  /** `POST /api/v1/dsync/cron/sync-google`: a forced sweep, run by the worker. */
  async function requestSweep(): Promise<void> {
    await o.jobs.add(o.db, SWEEP_TASK, { force: true }, { maxAttempts: 3 });
  }

  /**
   * Jackson's `sync(callback)`: syncs every syncable directory now, one after the other, in this
   * process. A directory whose sync fails unexpectedly does not stop the others.
   */
  async function syncAll(opts: SyncOptions = {}): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    for await (const ids of syncable())
      for (const id of ids) {
        try {
          results.push(await sync.syncDirectory(id, opts));
        } catch {
          results.push({
            directoryId: id,
            status: 'failed',
            reason: 'internal error (see the logs)',
            counts: emptyCounts(),
            durationMs: 0,
          });
        }
      }
    return results;
  }

  return { ...auth, syncDirectory: sync.syncDirectory, syncAll, sweep, requestSweep };
}

export type GoogleService = ReturnType<typeof createGoogleService>;
