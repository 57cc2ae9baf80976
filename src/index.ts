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

// Also as a bare import, which the declarations keep: they then see every key of `Config` (src/config.ts).
import './config.ts';
import { loadConfig } from './config.ts';
import { createContainer } from './container.ts';
import { isAppError } from './core/errors.ts';
import { loadTaskList, startWorker } from './core/jobs/runner.ts';
import { createLogger } from './core/log.ts';
import type { DirectorySyncController } from './dsync/controller.ts';
import type { SetupLink, SetupLinksService } from './dsync/setup-links.ts';
import type { EventCallback } from './dsync/types.ts';
import { workerLanes } from './task-registry.ts';

async function jackson<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isAppError(e)) throw new JacksonError(e.description || e.code, e.status);
    throw e;
  }
}

function setupLinkController(s: SetupLinksService): SetupLinkController {
  const dsyncOnly = (service: unknown) => {
    if (service !== undefined && service !== 'dsync')
      throw new JacksonError('Only dsync setup links are available: gatehouse has no SAML SSO.', 400);
  };
  return {
    create: (body) =>
      jackson(async () => {
        dsyncOnly(body?.service);
        return s.create(body);
      }),
    get: (id) => jackson(() => s.get(id)),
    getByToken: (token) => jackson(() => s.getByToken(token)),
    filterBy: (p) =>
      jackson(async () => {
        dsyncOnly(p?.service);
        if (p?.tenant && p.product)
          return { data: [await s.byTenantAndProduct(p.tenant, p.product)], pageToken: undefined };
        if (!p?.product && !p?.service)
          throw new JacksonError('Please provide either service or product to filter setup links', 400);
        return p.product ? s.byProduct(p.product, p) : s.byProduct(undefined, p, { all: true });
      }),
    remove: (p) =>
      jackson(async () => {
        await s.remove(p as { id?: string; tenant?: string; product?: string });
      }),
  };
}

export type { DirectorySyncController } from './dsync/controller.ts';
export type { SetupLink } from './dsync/setup-links.ts';
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
    /**
     * `sql` (PostgreSQL or CockroachDB at `url`) or `memory`/`mem` (embedded PostgreSQL). Jackson's
     * `mongo`, `redis`, `planetscale` and `dynamodb` are refused with an explanation.
     */
    engine?: 'sql' | 'memory' | 'mem' | 'mongo' | 'redis' | 'planetscale' | 'dynamodb';
    /** Jackson's `db.type`: `postgres` (default) or `cockroachdb`; the others are refused. */
    type?: string;
    /** PostgreSQL URL for `engine: 'sql'` (Jackson's default: postgresql://postgres:postgres@localhost:5432/postgres). */
    url?: string;
    /**
     * Key that seals directory secrets at rest (at least 16 characters). Use the value of the
     * service's `SECRETS_SYSTEM` to share a database with it. When it is not given: the
     * `SECRETS_SYSTEM` environment variable is used if set; otherwise (engine `sql`) secrets are
     * stored without encryption, as Jackson does without a key, and a loud warning is logged.
     * With `memory` a development key is generated in the data folder.
     */
    encryptionKey?: string;
    /** Jackson's `db.pageLimit`: default and largest page of every list (default 50). */
    pageLimit?: number;
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
    /** Jackson's `debugWebhooks`: log every webhook body and answer at info, redacted. */
    debugWebhooks?: boolean;
    /** Jackson's batch mode: queue events and send up to this many per directory per POST. */
    webhookBatchSize?: number;
    /** Batch mode: process the queue on this interval, in seconds (Jackson's unit). */
    webhookBatchCronInterval?: number;
    providers?: {
      /**
       * Jackson's Google OAuth client. The redirect URI is `externalUrl + callbackPath` and
       * `google_authorization_url` is `externalUrl + authorizePath`. `authUrl`, `tokenUrl` and
       * `apiUrl` (gatehouse's) point the calls elsewhere than Google (a proxy, a test double).
       * `cronInterval` (seconds, as Jackson) syncs every Google directory on that interval in this
       * process (runs of several processes are serialised per directory by a database lease).
       */
      google?: {
        clientId?: string;
        clientSecret?: string;
        authorizePath?: string;
        callbackPath?: string;
        authUrl?: string;
        tokenUrl?: string;
        apiUrl?: string;
        cronInterval?: number;
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
  /** Log level of the library's own logs (pino, to stderr). Default `warn` (`info` with a `logger`). */
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Jackson's `logger`: the library's logs go to it (message, then an object of fields) instead of stderr. */
  logger?: JacksonLogger;
}

/** Jackson's logger option. */
export interface JacksonLogger {
  info(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  error(message: string, ...rest: unknown[]): void;
  debug?(message: string, ...rest: unknown[]): void;
}

const UNSUPPORTED_ENGINES = new Set(['mongo', 'redis', 'planetscale', 'dynamodb']);

/**
 * The key that "seals" secrets when no key is configured. It is public (it is in this source), so
 * what it seals is as readable as plaintext: Jackson without `encryptionKey` stores the secrets
 * unencrypted, and this keeps that behaviour while the storage format stays the same (a real key
 * can be set later; values are re-sealed when a directory is saved).
 */
export const UNENCRYPTED_KEY = 'gatehouse-unencrypted-at-rest-no-key-configured';

/** A pino destination that hands each line to Jackson's logger. */
function loggerStream(l: JacksonLogger) {
  return {
    write(line: string) {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        l.info(line.trim());
        return;
      }
      const { level, msg, time: _t, service: _s, ...fields } = o;
      const n = Number(level);
      const text = typeof msg === 'string' ? msg : '';
      const extra = Object.keys(fields).length ? [fields] : [];
      if (n >= 50) l.error(text, ...extra);
      else if (n >= 40) l.warn(text, ...extra);
      else if (n < 30 && l.debug) l.debug(text, ...extra);
      else l.info(text, ...extra);
    },
  };
}

/** Jackson's error of the setup-link controller: `message` and `statusCode`. */
export class JacksonError extends Error {
  statusCode: number;
  constructor(message: string, statusCode = 500) {
    super(message);
    this.name = 'JacksonError';
    this.statusCode = statusCode;
  }
}

/** Jackson's `setupLinkController` for `service: 'dsync'` (methods throw JacksonError, as Jackson's). */
export interface SetupLinkController {
  create(body: Record<string, unknown>): Promise<SetupLink>;
  get(id: string): Promise<SetupLink>;
  getByToken(token: string): Promise<SetupLink>;
  filterBy(p: {
    product?: string;
    tenant?: string;
    service?: string;
    pageOffset?: number;
    pageLimit?: number;
    pageToken?: string;
  }): Promise<{ data: SetupLink[]; pageToken: undefined }>;
  remove(p: { id: string } | { tenant: string; product: string; service?: string }): Promise<void>;
}

export interface Controllers {
  directorySyncController: DirectorySyncController;
  setupLinkController: SetupLinkController;
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
  if (UNSUPPORTED_ENGINES.has(engine))
    throw new Error(
      `db.engine '${engine}' is not supported: gatehouse keeps directory sync in PostgreSQL (transactions order the events and make webhooks exactly-once per change). Use db.engine 'sql' with a PostgreSQL url, or 'mem' for an embedded PostgreSQL.`,
    );
  if (engine !== 'sql' && engine !== 'memory' && engine !== 'mem') throw new Error(`unsupported db.engine: ${engine}`);
  const dbType = opts.db?.type ?? 'postgres';
  if (engine === 'sql' && dbType !== 'postgres' && dbType !== 'cockroachdb')
    throw new Error(
      `db.type '${dbType}' is not supported: gatehouse runs on PostgreSQL (or CockroachDB). Use db.type 'postgres' with a postgres:// url.`,
    );
  const memory = engine !== 'sql';
  const envKeys = (process.env.SECRETS_SYSTEM ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const unencrypted = !memory && !opts.db?.encryptionKey && !envKeys.length;
  const keys = opts.db?.encryptionKey
    ? [opts.db.encryptionKey]
    : envKeys.length
      ? envKeys
      : unencrypted
        ? [UNENCRYPTED_KEY]
        : [];
  const pageLimit = opts.db?.pageLimit;
  const cron = opts.dsync?.providers?.google?.cronInterval;
  const config = loadConfig({
    env: {},
    overrides: {
      dsn: memory ? 'memory' : (opts.db?.url ?? 'postgresql://postgres:postgres@localhost:5432/postgres'),
      'secrets.system': keys,
      'dsync.external_url': opts.externalUrl,
      ...(opts.db?.dir ? { 'db.memory.dir': opts.db.dir } : {}),
      ...(opts.webhook?.endpoint ? { 'dsync.webhook_url': opts.webhook.endpoint } : {}),
      ...(opts.webhook?.secret ? { 'dsync.webhook_secret': opts.webhook.secret } : {}),
      ...(opts.dsync?.webhookBatchSize ? { 'dsync.webhook_batch_size': opts.dsync.webhookBatchSize } : {}),
      ...(opts.dsync?.webhookBatchCronInterval
        ? { 'dsync.webhook_batch_cron_interval': opts.dsync.webhookBatchCronInterval }
        : {}),
      ...(opts.dsync?.debugWebhooks ? { 'dsync.debug_webhooks': true } : {}),
      ...(Number.isInteger(pageLimit) && (pageLimit as number) > 0 ? { 'dsync.page_limit': pageLimit } : {}),
      ...googleOverrides(opts.dsync?.providers?.google),
    },
  });
  const log = createLogger({
    level: opts.logLevel ?? (opts.logger ? 'info' : 'warn'),
    destination: (opts.logger ? loggerStream(opts.logger) : process.stderr) as never,
  });
  if (unencrypted)
    log.error(
      'db.encryptionKey is not set (nor SECRETS_SYSTEM): directory secrets (SCIM secrets, webhook secrets, Google tokens) are stored WITHOUT ENCRYPTION, as Jackson does without a key. Set db.encryptionKey (16+ random characters) in production.',
    );
  const container = await createContainer({
    config,
    log,
    autoMigrate: true,
    dsync: opts.scimPath ? { scimPath: opts.scimPath } : {},
  });
  // The container's directory-sync services: one service graph per process.
  const { dsync } = container;
  let runner: Awaited<ReturnType<typeof startWorker>> | undefined;
  if (opts.worker ?? memory) {
    try {
      runner = await startWorker({
        pool: container.pool,
        log,
        concurrency: config.worker.concurrency,
        lanes: workerLanes(config),
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
  // Jackson's `providers.google.cronInterval`: a timer in this process (the sync's per-directory
  // lease keeps runs of several processes from overlapping).
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  if (typeof cron === 'number' && cron > 0) {
    timer = setInterval(() => {
      if (running) return;
      running = dsync.services.google
        .syncAll()
        .catch((err: unknown) => log.error({ err }, 'google sync failed'))
        .finally(() => {
          running = undefined;
        });
    }, cron * 1000);
    timer.unref();
  }
  return {
    setupLinkController: setupLinkController(dsync.services.setupLinks),
    directorySyncController: dsync.controller({
      ...(opts.dsync?.callback ? { callback: opts.dsync.callback } : {}),
      webhooksWithCallback: opts.dsync?.webhooksWithCallback === true,
    }),
    async close() {
      if (timer) clearInterval(timer);
      await running;
      await runner?.stop();
      await container.close();
    },
  };
}

export default controllers;
