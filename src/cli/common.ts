/**
 * Shared CLI plumbing: global flags, one-line fatal errors, graceful shutdown on signals. Every
 * command module imports this at start-up, so it imports nothing of the application: commands
 * load what they run inside their actions (`import()`), and `version`, `--help` and the admin-API
 * client commands stay cheap to start.
 */
import type { Command } from 'commander';

export interface GlobalFlags {
  config?: string;
  dev?: boolean;
  /** Hidden, for tests: read migrations from this folder instead of `sql/`. */
  migrationsDir?: string;
}

/**
 * The expected failures of the config loader, the database and the job queue, told apart by the
 * `name` their classes set (ConfigError, DsnError, …): `instanceof` would load those modules into
 * every command, also into the ones that failed for another reason.
 */
const KNOWN = new Set(['ConfigError', 'DialectError', 'DsnError', 'MigrationError', 'PoolerError']);

/** Expected failures print one clear line (no stack) and exit 1. */
export function fail(e: unknown): never {
  if (e instanceof Error && KNOWN.has(e.name)) {
    process.stderr.write(`${e.message}\n`);
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
