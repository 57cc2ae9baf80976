/** Shared CLI plumbing: config from flags/env, one-line fatal errors, graceful shutdown on signals. */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { ConfigError, type Config, loadConfig } from '../core/config/load.ts';
import { DialectError } from '../core/db/dialect.ts';
import { DsnError } from '../core/db/dsn.ts';
import { MigrationError } from '../core/db/migrate.ts';
import { PoolerError } from '../core/jobs/pooler.ts';

export interface GlobalFlags {
  config?: string;
  dev?: boolean;
  /** Hidden, for tests: read migrations from this folder instead of `sql/`. */
  migrationsDir?: string;
}

export function configFrom(flags: GlobalFlags): Config {
  return loadConfig({ file: flags.config, ...(flags.dev ? { overrides: { dev: true } } : {}) });
}

/**
 * For commands that seal nothing (`migrate`, `janitor`; Hydra runs them with a DSN alone): without
 * `secrets.system`, a random secret that lives only in this process stands in, so that the
 * container neither refuses to start nor writes a development secret to disk.
 */
export function withEphemeralSecret(config: Config): Config {
  if (config.secrets.system.length) return config;
  return { ...config, secrets: { ...config.secrets, system: [randomBytes(32).toString('base64url')] } };
}

const KNOWN = [ConfigError, DialectError, DsnError, MigrationError, PoolerError];

/** Expected failures print one clear line (no stack) and exit 1. */
export function fail(e: unknown): never {
  if (KNOWN.some((k) => e instanceof k)) {
    process.stderr.write(`${(e as Error).message}\n`);
  } else if (e instanceof Error && (e as { code?: string }).code === 'ECONNREFUSED') {
    process.stderr.write('error: the database refused the connection; check dsn\n');
  } else if (e instanceof Error) {
    process.stderr.write(`error: ${e.message}\n`);
  } else {
    process.stderr.write(`error: ${String(e)}\n`);
  }
  process.exit(1);
}

export async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    fail(e);
  }
}

/** Runs `stop` once on the first SIGTERM/SIGINT; a second signal exits at once. */
export function onShutdown(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (sig: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    stop()
      .then(() => process.exit(0))
      .catch((e) => {
        process.stderr.write(`error during shutdown (${sig}): ${(e as Error).message}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/**
 * A verb command (`create`, `get`, `list`, `update`, `delete`) that several command groups add
 * subcommands to (`create oauth2-client`, `create jwks`): found if already registered, else added.
 */
export function verb(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}

/** Hydra's string-slice flags: repeatable, each value comma-separated (a commander option parser). */
export const collect = (v: string, prev: string[] | undefined) => [
  ...(prev ?? []),
  ...v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
];
