/**
 * The directory-sync services, wired from the domain's deps: what the routes, the library
 * controller, the tasks and the console call (through the face, src/dsync/index.ts). No I/O
 * happens here.
 */
import { keyRing } from '../core/crypto/keys.ts';
import { jobsFor } from '../core/jobs/registry.ts';
import { SafeFetchError } from '../core/safe-fetch.ts';
import { createApplier } from './change/apply.ts';
import { createAuthorizationLinks } from './cloud/google/link.ts';
import { createGoogleService } from './cloud/google/service.ts';
import type { DsyncDeps } from './deps.ts';
import { createDirectoriesService } from './directories/service.ts';
import { createBatchService } from './events/batch.ts';
import { debugWebhooks } from './events/debug.ts';
import { createDeliveryService } from './events/delivery.ts';
import { createEventFeedService } from './events/feed.ts';
import { createLifecycleService } from './events/lifecycle.ts';
import { createWebhookLogsService } from './events/logs.ts';
import { createRetryService } from './events/retry.ts';
import type { DeliveryPolicy } from './events/service.ts';
import { Wakeups } from './events/wake.ts';
import { createGroupsService } from './groups/service.ts';
import { createHealthService } from './health.ts';
import { DSYNC_KEY_PURPOSES } from './keys.ts';
import { createScimActivity } from './scim/activity.ts';
import { SCIM_PREFIX } from './scim/handlers.ts';
import { createScimService } from './scim/service.ts';
import { createSetupLinksService } from './setup-links.ts';
import { dsyncTasks } from './tasks.ts';
import { createUsersService } from './users/service.ts';
import { createWritesService } from './writes.ts';

export interface DsyncOptions {
  /** Jackson's `scimPath` (library only; the HTTP routes always serve `/api/scim/v2.0`). */
  scimPath?: string;
}

/**
 * The domain's service graph, built once per process from what the container hands in.
 * Long: it is wiring only, one service after another in the order they depend on each other;
 * split, the same dependencies would be passed through a second function.
 */
export function createDsyncServices(core: DsyncDeps, opts: DsyncOptions = {}) {
  const cfg = core.config.dsync;
  const fetch = cfg.debug_webhooks ? debugWebhooks(core.fetch, core.log) : core.fetch;
  const externalUrl = cfg.external_url.replace(/\/$/, '');
  const g = cfg.google;
  const pageLimit = cfg.page_limit;
  const jobs = jobsFor(dsyncTasks, core.queue);
  const lifecycle = createLifecycleService({
    jobs,
    clock: core.clock,
    fetch,
    endpoint: cfg.webhook_url,
    secret: cfg.webhook_secret,
    maxAttempts: cfg.webhook.max_attempts,
  });
  const directories = createDirectoriesService({
    db: core.db,
    audit: core.audit,
    changes: core.changes,
    clock: core.clock,
    ring: keyRing(core.config.secrets.system, DSYNC_KEY_PURPOSES.secrets),
    externalUrl,
    scimPath: (opts.scimPath ?? SCIM_PREFIX).replace(/\/$/, ''),
    googleAuthorizePath: g.authorize_path,
    lifecycle: (trx, type, d) => lifecycle.emit(trx, type, d),
    // With internal ranges refused, a webhook URL that resolves inward is refused when it is set
    // (delivery checks again on every request). A name that does not resolve now is accepted.
    pageLimit,
    checkWebhookUrl: async (url) => {
      if (!cfg.disallow_private_ip_ranges) return undefined;
      try {
        await fetch.check(url);
      } catch (e) {
        if (e instanceof SafeFetchError && (e.code === 'blocked_address' || e.code === 'invalid_url'))
          return 'it must not point to a private, loopback or otherwise internal address.';
      }
      return undefined;
    },
  });
  const delivery: DeliveryPolicy = {
    batchMode: cfg.webhook_batch_size > 0,
    batchIntervalMs: cfg.webhook_batch_cron_interval,
    maxAttempts: cfg.webhook.max_attempts,
    now: () => core.clock.now(),
    jobs,
  };
  const webhookLogs = createWebhookLogsService({
    db: core.db,
    clock: core.clock,
    directories,
    ttlMs: cfg.webhook_logs_ttl,
    pageLimit,
  });
  const setupLinks = createSetupLinksService({
    db: core.db,
    clock: core.clock,
    ring: keyRing(core.config.secrets.system, DSYNC_KEY_PURPOSES.secrets),
    directories,
    externalUrl,
    pageLimit,
    audit: core.audit,
  });
  const outbound = { db: core.db, jobs, clock: core.clock, log: core.log, fetch, directories, logs: webhookLogs };
  // Commits of this process's changes wake its lingering senders (events/wake.ts).
  const wake = new Wakeups();
  const applier = createApplier(core.db, core.audit, wake); // one per process: changes of a directory may share a call
  const activity = createScimActivity({ db: core.db, clock: core.clock, log: core.log });
  const batch = createBatchService({
    ...outbound,
    batchSize: cfg.webhook_batch_size,
    intervalMs: cfg.webhook_batch_cron_interval,
  });
  return {
    directories,
    users: createUsersService({ db: core.db, resolveScope: directories.resolveScope, pageLimit }),
    groups: createGroupsService({ db: core.db, resolveScope: directories.resolveScope, pageLimit }),
    webhookLogs,
    scim: createScimService({ db: core.db, directories, delivery, applier, pageLimit, baseUrl: externalUrl, activity }),
    writes: createWritesService({ db: core.db, directories, delivery, applier }),
    feed: createEventFeedService({
      db: core.db,
      clock: core.clock,
      directories,
      retentionMs: cfg.events.retention,
      pageLimit,
    }),
    setupLinks,
    /** How events are delivered (configuration); writes may turn webhooks off for one call. */
    policy: delivery,
    delivery: createDeliveryService({
      ...outbound,
      maxAttempts: cfg.webhook.max_attempts,
      lingerMs: cfg.webhook.linger,
      wake,
    }),
    batch,
    lifecycle,
    /** Applies directory changes (change/apply.ts): one per process, so that changes of a directory share calls. */
    applier,
    webhooks: createRetryService({ queueDb: core.queue.db, directories, batch }),
    health: createHealthService({ db: core.db, clock: core.clock, queueDb: core.queue.db }),
    google: createGoogleService({
      db: core.db,
      jobs,
      clock: core.clock,
      log: core.log,
      directories,
      fetch: core.fetch,
      stateRing: keyRing(core.config.secrets.system, 'state'),
      clientId: g.client_id,
      clientSecret: g.client_secret,
      authUrl: g.auth_url,
      tokenUrl: g.token_url,
      apiUrl: g.api_url,
      redirectUri: `${externalUrl}${g.callback_path}`,
      authorizeUrl: `${externalUrl}${g.authorize_path}`,
      links: createAuthorizationLinks({
        ring: keyRing(core.config.secrets.system, DSYNC_KEY_PURPOSES.links),
        clock: core.clock,
        ttlMs: g.authorization_link_ttl,
      }),
      // A setup link's token also proves the right to authorize one of its tenant's directories.
      extraVerifiers: [setupLinks.verifyForDirectory],
      syncIntervalMs: g.sync_interval,
      delivery,
      applier,
    }),
  };
}

export type DsyncServices = ReturnType<typeof createDsyncServices>;
