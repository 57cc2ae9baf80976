/**
 * The composition root: config → logger → database → domains. Everything a process needs is built
 * here once and passed down explicitly; the worker runner binds tasks to the container, each task
 * asking only for its domain's task context.
 * Each domain gets only what it declares (`OAuth2Deps`, `DsyncDeps`): its outbound client, built
 * here from its own configuration, and never the pool, the embedded database or `close()`.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { type Audit, type AuditType, auditCatalogue, createAudit } from './core/audit/events.ts';
import { type Clock, systemClock } from './core/clock.ts';
import { distinctPurposes } from './core/crypto/keys.ts';
import './config.ts'; // registers the configuration's parts (bench and library callers load it through here)
import type { Config } from './core/config/load.ts';
import { type ChangeFeed, createChangeFeed } from './core/db/changes.ts';
import { createDatabase } from './core/db/client.ts';
import { checkDialect } from './core/db/dialect.ts';
import { DsnError, type ParsedDsn, parseDsn } from './core/db/dsn.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './core/db/embedded.ts';
import { assertQueueEngine } from './core/db/engine.ts';
import { migrate, migrationStatus } from './core/db/migrate.ts';
import { directQueue, type JobQueue, outboxQueue } from './core/jobs/queue.ts';
import { type Jobs, jobsFor } from './core/jobs/registry.ts';
import { graphileLogger } from './core/jobs/runner.ts';
import { createLogger, type Logger } from './core/log.ts';
import {
  configureMetrics,
  observeJobs,
  observeOutbox,
  observePool,
  registerMetrics,
} from './core/observability/metrics.ts';
import { createSafeFetch, type Resolver, type SafeFetch, type SafeFetchOptions } from './core/safe-fetch.ts';
import type { Database } from './database.ts';
import {
  createDsync,
  DSYNC_AUDIT_TYPES,
  DSYNC_KEY_PURPOSES,
  type Dsync,
  type DsyncOptions,
  dsyncMetrics,
} from './dsync/index.ts';
import { createOAuth2, OAUTH2_AUDIT_TYPES, type OAuth2, oauth2Metrics } from './oauth2/index.ts';
import { type Tasks, taskRegistry } from './task-registry.ts';

// The faces' audit event types and metric families, declared to the core's registry types (the
// core names no domain): every `audit.record(exec, { type })` and `metrics.<name>` is checked against them.
declare module './core/audit/events.ts' {
  interface AuditTypes
    extends Record<(typeof OAUTH2_AUDIT_TYPES)[number], true>,
      Record<(typeof DSYNC_AUDIT_TYPES)[number], true> {}
}
declare module './core/observability/metrics.ts' {
  interface Metrics extends Readonly<typeof oauth2Metrics>, Readonly<typeof dsyncMetrics> {}
}

/** Shared infrastructure every domain receives. */
export interface Core {
  config: Config;
  log: Logger;
  clock: Clock;
  dsn: ParsedDsn;
  db: Kysely<Database>;
  pool: pg.Pool;
  embedded: EmbeddedPostgres | undefined;
  /** The guarded outbound HTTP clients (the only way to reach the network), configured per side. */
  fetch: {
    oauth2: SafeFetch;
    /**
     * Requests for clients created through dynamic registration: internal addresses refused unless
     * `oidc.dynamic_client_registration.allow_internal_addresses` (then the same as `oauth2`).
     */
    oauth2Dynamic: SafeFetch;
    dsync: SafeFetch;
  };
  /** Change notifications from other processes (prepared documents, key caches); listens on first use. */
  changes: ChangeFeed;
  /** Where transactions' jobs go: graphile-worker in `db`, or the outbox when `queue.dsn` is set. */
  queue: JobQueue;
  /** Records audit events (`audit.enabled`: rows in the caller's transaction); every service takes this one. */
  audit: Audit;
  /** Every audit event type of the program (the faces' lists): the audit routes filter by them. */
  auditTypes: readonly AuditType[];
  close(): Promise<void>;
}

/** Core plus the two domains. The worker runner binds tasks to this; each task's context is a part of it. */
export interface Container extends Core {
  /** Jobs of any task, typed by the registry (src/task-registry.ts). */
  jobs: Jobs<Tasks>;
  oauth2: OAuth2;
  dsync: Dsync;
}

export interface ContainerOptions {
  config: Config;
  log?: Logger;
  clock?: Clock;
  /** Connect here instead of `config.dsn` (tests: a per-file database). */
  databaseUrl?: string;
  /** Run the startup dialect check (the DSN scheme must match the server; see core/db/dialect.ts). */
  checkDialect?: boolean;
  /** Apply pending migrations at start (the `memory` default does). */
  autoMigrate?: boolean;
  /** DNS seam of the outbound clients (tests resolve names to chosen addresses). */
  resolver?: Resolver;
  /** Extra options of both outbound clients (tests: a CA for a loopback https server). */
  fetchOptions?: Partial<SafeFetchOptions>;
  /** Options of the directory-sync domain (the library's Jackson `scimPath`). */
  dsync?: DsyncOptions;
}

/** The OAuth2 side's client: `clients.http.disallow_private_ip_ranges` and `…private_ip_exception_urls`. */
export function oauth2SafeFetch(config: Config, extra: Partial<SafeFetchOptions> = {}): SafeFetch {
  return createSafeFetch({
    disallowPrivate: config.clients.http.disallow_private_ip_ranges,
    allowList: config.clients.http.private_ip_exception_urls,
    ...extra,
  });
}

/** The directory-sync side's client (webhooks, Google APIs): `dsync.disallow_private_ip_ranges`. */
export function dsyncSafeFetch(config: Config, extra: Partial<SafeFetchOptions> = {}): SafeFetch {
  return createSafeFetch({
    disallowPrivate: config.dsync.disallow_private_ip_ranges,
    timeoutMs: config.dsync.webhook.timeout,
    maxBytes: 5 << 20, // Google directory pages can be large
    ...extra,
  });
}

/** The system secrets a process uses: the configured ones, else the development secret of `dsn: memory` if one exists. */
export function systemSecrets(config: Config): string[] {
  if (config.secrets.system.length) return [...config.secrets.system];
  const file = join(resolve(config.db.memory.dir), 'dev-secret');
  return config.dsn === 'memory' && existsSync(file) ? [readFileSync(file, 'utf8').trim()] : [];
}

/** With `dsn: memory` and no secret configured, a development secret is generated once and kept in the data folder. */
function devSecret(dir: string, log: Logger): string {
  const file = join(resolve(dir), 'dev-secret');
  if (!existsSync(file)) {
    mkdirSync(resolve(dir), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  }
  log.warn(
    { file },
    'secrets.system is not set: using a generated development secret. This is for development only; set SECRETS_SYSTEM in production.',
  );
  return readFileSync(file, 'utf8').trim();
}

export async function createContainer(o: ContainerOptions): Promise<Container> {
  const log =
    o.log ??
    createLogger({
      level: o.config.log.level,
      format: o.config.log.format,
      leakSensitiveValues: o.config.log.leak_sensitive_values,
    });
  let config = o.config;
  const dsn = parseDsn(config.dsn);
  let embedded: EmbeddedPostgres | undefined;
  let url = o.databaseUrl ?? dsn.url;
  if (!o.databaseUrl && dsn.kind === 'memory') {
    embedded = await startEmbeddedPostgres({ dir: config.db.memory.dir, log });
    url = embedded.url;
    log.info({ dataDir: embedded.dataDir }, 'embedded PostgreSQL started');
  }
  if (config.secrets.system.length === 0) {
    config = { ...config, secrets: { ...config.secrets, system: [devSecret(config.db.memory.dir, log)] } };
  }
  const handle = createDatabase<Database>(url, {
    max: config.db.pool.max,
    connectTimeoutMs: config.db.pool.connect_timeout,
    log,
    engine: dsn.kind === 'cockroach' ? 'cockroach' : 'postgres',
  });
  try {
    if (o.checkDialect) await checkDialect(handle.pool, dsn.kind);
    // After the dialect check, which says first when cockroach:// reaches a PostgreSQL server.
    assertQueueEngine(config.dsn, config.queue.dsn);
    if (o.autoMigrate ?? dsn.kind === 'memory') {
      const r = await migrate(handle.pool, { graphileLogger: graphileLogger(log) });
      if (r.applied.length) log.info({ applied: r.applied }, 'migrations applied');
    }
  } catch (e) {
    await handle.destroy();
    await embedded?.stop();
    throw e;
  }
  const seam = { log, ...(o.resolver ? { resolver: o.resolver } : {}), ...o.fetchOptions };
  const oauth2 = oauth2SafeFetch(config, seam);
  const oauth2Dynamic = config.oidc.dynamic_client_registration.allow_internal_addresses
    ? oauth2
    : oauth2SafeFetch(config, { ...seam, disallowPrivate: true });
  // A separate queue database (queue.dsn): jobs go through the outbox; job state is read there.
  const queueDsn = config.queue.dsn.trim();
  const queueHandle = queueDsn
    ? createDatabase(queueDsnUrl(queueDsn), { max: 2, log, applicationName: 'gatehouse-queue' })
    : undefined;
  const queue = queueHandle ? outboxQueue(queueHandle.db, queueHandle.pool) : directQueue(handle.db, handle.pool);
  // LISTEN needs a direct session: queue.direct_dsn when dsn goes through a transaction pooler
  // (with a separate queue database, queue.direct_dsn is the queue's: listen on dsn).
  const direct = queueDsn ? '' : config.queue.direct_dsn.trim();
  // CockroachDB has no LISTEN/NOTIFY: caches of keys and clients rebuild per use there.
  const listen = dsn.kind !== 'cockroach';
  const changes = direct
    ? createChangeFeed({ url: parseDsn(direct).url, log, direct: true, listen })
    : createChangeFeed({ url, log, direct: dsn.kind === 'memory', listen });
  // The faces' metric families join the process's registry (once; a second container finds them there).
  registerMetrics(oauth2Metrics, dsyncMetrics);
  // The domains' own key purposes: no two share a label (nor one of the core's, domainKeyPurpose).
  distinctPurposes(Object.values(DSYNC_KEY_PURPOSES));
  configureMetrics({ enabled: config.metrics.enabled });
  // The job gauges read graphile-worker's tables in the queue database (always PostgreSQL).
  const unobserve = [observePool(handle.pool), observeJobs(queue.pool)];
  if (queueHandle) unobserve.push(observeOutbox(handle.pool));
  const core: Core = {
    config,
    log,
    clock: o.clock ?? systemClock,
    dsn,
    db: handle.db,
    pool: handle.pool,
    embedded,
    fetch: { oauth2, oauth2Dynamic, dsync: dsyncSafeFetch(config, seam) },
    changes,
    queue,
    audit: createAudit({ enabled: config.audit.enabled }),
    auditTypes: auditCatalogue(OAUTH2_AUDIT_TYPES, DSYNC_AUDIT_TYPES),
    async close() {
      await changes.close();
      for (const stop of unobserve) stop();
      await queueHandle?.destroy();
      await handle.destroy();
      await embedded?.stop();
    },
  };
  const base = { config, log, clock: core.clock, db: core.db, queue, audit: core.audit };
  return {
    ...core,
    jobs: jobsFor(taskRegistry, queue),
    oauth2: createOAuth2({ ...base, fetch: oauth2, fetchDynamic: oauth2Dynamic, changes }),
    dsync: createDsync({ ...base, fetch: core.fetch.dsync, changes }, o.dsync),
  };
}

/** `queue.dsn`: a PostgreSQL DSN (graphile-worker runs only on PostgreSQL). */
export function queueDsnUrl(value: string): string {
  const parsed = parseDsn(value);
  if (parsed.kind !== 'postgres')
    throw new DsnError('queue.dsn: expected a postgres:// DSN (graphile-worker runs only on PostgreSQL)');
  return parsed.url;
}

/** Failing readiness checks: the database answers and no migration is pending. */
export async function readiness(c: Core): Promise<Record<string, string>> {
  const errors: Record<string, string> = {};
  try {
    await c.pool.query('SELECT 1');
  } catch {
    errors.database = 'the database is not reachable';
    return errors;
  }
  try {
    const pending = (await migrationStatus(c.pool)).filter((m) => m.status !== 'applied');
    if (pending.length) errors.migrations = `${pending.length} migration(s) not applied: run gatehouse migrate sql`;
  } catch {
    errors.migrations = 'the migration state could not be read';
  }
  return errors;
}
