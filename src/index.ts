/**
 * Library entry point: Jackson-style controllers for embedding directory sync.
 *
 *   import { controllers } from 'gatehouse';
 *   const { directorySyncController, close } = await controllers({
 *     externalUrl: 'https://sso.example.com',
 *     db: { engine: 'sql', url: 'postgres://…', encryptionKey: process.env.SECRETS_SYSTEM },
 *   });
 *
 * `db.engine: 'memory'` (or Jackson's `'mem'`) starts the embedded PostgreSQL in `db.dir`
 * (default `.gatehouse`). Migrations are applied in both cases. Webhooks are delivered by
 * graphile-worker jobs: with `memory` (or `worker: true`) the library runs a worker in-process
 * (jobs only, no crontab); with a database shared with a gatehouse service, that service's
 * workers deliver them. `close()`
 * stops the worker, releases the pool and stops an embedded PostgreSQL.
 */
import { loadConfig } from './core/config/load.ts';
import { createContainer } from './container.ts';
import { loadTaskList, startWorker } from './core/jobs/runner.ts';
import { createLogger } from './core/log.ts';
import type { DirectorySyncController } from './dsync/controller.ts';
import { createDirectorySyncController } from './dsync/controller.ts';
import { createDsyncServices } from './dsync/index.ts';
import type { EventCallback } from './dsync/types.ts';

export type { DirectorySyncController } from './dsync/controller.ts';
export type {
  DirectoryRecord,
  DirectorySyncEvent,
  DirectorySyncEventType,
  DirectorySyncRequest,
  DirectorySyncResponse,
  DirectoryType,
  EventCallback,
  GroupRecord,
  UserRecord,
  WebhookEvent,
} from './dsync/types.ts';

export interface ControllerOptions {
  /** Base URL identity providers reach; prefix of `scim.endpoint`. Required. */
  externalUrl: string;
  /** Jackson's `scimPath` (default `/api/scim/v2.0`), used to build `scim.path`. */
  scimPath?: string;
  db?: {
    engine?: 'sql' | 'memory' | 'mem';
    /** PostgreSQL URL for `engine: 'sql'` (Jackson's default: postgresql://postgres:postgres@localhost:5432/postgres). */
    url?: string;
    /**
     * Key that seals directory secrets at rest (at least 16 characters). Use the value of the
     * service's `SECRETS_SYSTEM` to share a database with it. Required for `engine: 'sql'`; with
     * `memory` a development key is generated in the data folder when it is missing.
     */
    encryptionKey?: string;
    /** Data folder of the embedded PostgreSQL (`engine: 'memory'`). */
    dir?: string;
  };
  dsync?: {
    /**
     * Jackson's embedded mode: every event of `requests.handle` and of the direct writes
     * (`users.create`, `groups.addUserToGroup`, …) goes to this callback, after the commit, and no
     * webhook is sent for them (the callback replaces delivery, as in Jackson). A callback passed
     * to `requests.handle(request, callback)` does the same for that call.
     */
    callback?: EventCallback;
    /** Keep webhook delivery as well when a callback receives the events (default false). */
    webhooksWithCallback?: boolean;
    /** Jackson's batch mode: queue events and send up to this many per directory per POST. */
    webhookBatchSize?: number;
    /** Batch mode: process the queue on this interval, in seconds (Jackson's unit). */
    webhookBatchCronInterval?: number;
    providers?: {
      /**
       * Jackson's Google OAuth client. The redirect URI is `externalUrl + callbackPath` and
       * `google_authorization_url` is `externalUrl + authorizePath`. `authUrl`, `tokenUrl` and
       * `apiUrl` (gatehouse's) point the calls elsewhere than Google (a proxy, a test double).
       * There is no `cronInterval`: call `sync()` on your own schedule, or run `gatehouse worker`.
       */
      google?: {
        clientId?: string;
        clientSecret?: string;
        authorizePath?: string;
        callbackPath?: string;
        authUrl?: string;
        tokenUrl?: string;
        apiUrl?: string;
      };
    };
  };
  /** Global webhook for `dsync.created/deleted/activated/deactivated` (Jackson's `webhook`). */
  webhook?: { endpoint?: string; secret?: string };
  /**
   * Run a graphile-worker in this process (jobs only: webhook deliveries, batch runs; no crontab).
   * Default: only with the memory engine.
   */
  worker?: boolean;
  /** Log level of the library's own logs (pino, to stderr). Default `warn`. */
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

export interface Controllers {
  directorySyncController: DirectorySyncController;
  /** Closes the database pool and stops an embedded PostgreSQL. */
  close(): Promise<void>;
}

type GoogleProviderOptions = NonNullable<NonNullable<ControllerOptions['dsync']>['providers']>['google'];

function googleOverrides(g: GoogleProviderOptions): Record<string, string> {
  const keys = {
    clientId: 'client_id',
    clientSecret: 'client_secret',
    authorizePath: 'authorize_path',
    callbackPath: 'callback_path',
    authUrl: 'auth_url',
    tokenUrl: 'token_url',
    apiUrl: 'api_url',
  } as const;
  const out: Record<string, string> = {};
  for (const [k, key] of Object.entries(keys)) {
    const v = g?.[k as keyof typeof keys];
    if (typeof v === 'string' && v !== '') out[`dsync.google.${key}`] = v;
  }
  return out;
}

export async function controllers(opts: ControllerOptions): Promise<Controllers> {
  if (!opts?.externalUrl) throw new Error('externalUrl is required');
  const engine = opts.db?.engine ?? 'sql';
  if (engine !== 'sql' && engine !== 'memory' && engine !== 'mem') throw new Error(`unsupported db.engine: ${engine}`);
  const memory = engine !== 'sql';
  const key = opts.db?.encryptionKey;
  if (!memory && !key)
    throw new Error(
      "db.encryptionKey is required with db.engine 'sql': gatehouse seals directory secrets at rest (use the service's SECRETS_SYSTEM value)",
    );
  const config = loadConfig({
    env: {},
    overrides: {
      dsn: memory ? 'memory' : (opts.db?.url ?? 'postgresql://postgres:postgres@localhost:5432/postgres'),
      'secrets.system': key ? [key] : [],
      'dsync.external_url': opts.externalUrl,
      ...(opts.db?.dir ? { 'db.memory.dir': opts.db.dir } : {}),
      ...(opts.webhook?.endpoint ? { 'dsync.webhook_url': opts.webhook.endpoint } : {}),
      ...(opts.webhook?.secret ? { 'dsync.webhook_secret': opts.webhook.secret } : {}),
      ...(opts.dsync?.webhookBatchSize ? { 'dsync.webhook_batch_size': opts.dsync.webhookBatchSize } : {}),
      ...(opts.dsync?.webhookBatchCronInterval
        ? { 'dsync.webhook_batch_cron_interval': opts.dsync.webhookBatchCronInterval }
        : {}),
      ...googleOverrides(opts.dsync?.providers?.google),
    },
  });
  const log = createLogger({ level: opts.logLevel ?? 'warn', destination: process.stderr as never });
  const container = await createContainer({ config, log, autoMigrate: true });
  const services = createDsyncServices(container, opts.scimPath ? { scimPath: opts.scimPath } : {});
  let runner: Awaited<ReturnType<typeof startWorker>> | undefined;
  if (opts.worker ?? memory) {
    try {
      runner = await startWorker({
        pool: container.pool,
        log,
        concurrency: config.worker.concurrency,
        pollInterval: config.worker.poll_interval,
        livenessIntervalMs: config.worker.liveness_check_interval,
        taskList: await loadTaskList(container),
        // Jobs only: schedules (cloud sync sweeps, janitor, log purge) belong to `gatehouse worker`.
        crontab: '',
      });
    } catch (e) {
      await container.close();
      throw e;
    }
  }
  return {
    directorySyncController: createDirectorySyncController(services, {
      log,
      ...(opts.dsync?.callback ? { callback: opts.dsync.callback } : {}),
      webhooksWithCallback: opts.dsync?.webhooksWithCallback === true,
    }),
    async close() {
      await runner?.stop();
      await container.close();
    },
  };
}

export default controllers;
