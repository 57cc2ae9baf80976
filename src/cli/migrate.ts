/** `gatehouse migrate sql|status`: the command definitions; what they run is in migrate-run.ts. */
import type { Command } from 'commander';
import { run } from './common.ts';
import type { SqlFlags } from './migrate-run.ts';

export function registerMigrate(program: Command): void {
  const m = program.command('migrate').description('Database migrations');
  m.command('sql')
    .argument('[args...]', '[up|down] [DSN]: up is the default; a DSN given here replaces the configured one')
    .description(
      'Apply pending sql/ migrations and the job queue schema (runs the dialect check first). Hydra forms: migrate sql up DSN, migrate sql -e',
    )
    .option(
      '-e, --read-from-env',
      'read the DSN from the environment (DSN), as Hydra; otherwise config and environment',
    )
    .option('-y, --yes', 'apply without asking')
    .option('--force', 'with down: revert the newest migration through its down section, after a warning')
    .action((args: string[], o: SqlFlags) =>
      run(async () => (await import('./migrate-run.ts')).migrateSql(program, args, o)),
    );
  m.command('status')
    .argument('[dsn]', 'database to inspect instead of the configured one')
    .description('List applied and pending migrations')
    .option('-e, --read-from-env', 'read the DSN from the environment (DSN), as Hydra')
    .option('--json', 'print JSON')
    .action((dsn: string | undefined, o: { json?: boolean; readFromEnv?: boolean }) =>
      run(async () => (await import('./migrate-run.ts')).migrateStatus(program, dsn, o)),
    );
}
