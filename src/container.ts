/**
 * The composition root: config → logger → database → domains. Everything a process needs is built
 * here once and passed down explicitly; tasks receive the container through the worker runner.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Config } from './core/config/load.ts';
import { type Clock, systemClock } from './core/clock.ts';
import { type ChangeFeed, createChangeFeed } from './core/db/changes.ts';
import { createDatabase } from './core/db/client.ts';
import { checkDialect } from './core/db/dialect.ts';
import { type ParsedDsn, parseDsn } from './core/db/dsn.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './core/db/embedded.ts';
import { migrate, migrationStatus } from './core/db/migrate.ts';
import type { Database } from './core/db/schema.ts';
import { graphileLogger } from './core/jobs/runner.ts';
import { createLogger, type Logger } from './core/log.ts';
import { configureAudit } from './core/audit/events.ts';
import { configureMetrics, observeJobs, observePool } from './core/observability/metrics.ts';
import {
  dsyncSafeFetch,
  oauth2SafeFetch,
  type Resolver,
  type SafeFetch,
  type SafeFetchOptions,
} from './core/safe-fetch.ts';
import { createDsync, type Dsync } from './dsync/index.ts';
import { createOAuth2, type OAuth2 } from './oauth2/index.ts';

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
  close(): Promise<void>;
}

/** Core plus the two domains. Tasks receive this (bound by the worker runner). */
export interface Container extends Core {
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
  const handle = createDatabase(url, {
    max: config.db.pool.max,
    connectTimeoutMs: config.db.pool.connect_timeout,
    log,
  });
  try {
    if (o.checkDialect) await checkDialect(handle.pool, dsn.kind);
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
  // LISTEN needs a direct session: queue.direct_dsn when dsn goes through a transaction pooler.
  const direct = config.queue.direct_dsn.trim();
  const changes = direct
    ? createChangeFeed({ url: parseDsn(direct).url, log, direct: true })
    : createChangeFeed({ url, log, direct: dsn.kind === 'memory' });
  configureAudit({ enabled: config.audit.enabled });
  configureMetrics({ enabled: config.metrics.enabled });
  const unobserve = [observePool(handle.pool), observeJobs(handle.pool)];
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
    async close() {
      await changes.close();
      for (const stop of unobserve) stop();
      await handle.destroy();
      await embedded?.stop();
    },
  };
  return { ...core, oauth2: createOAuth2(core), dsync: createDsync(core) };
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
