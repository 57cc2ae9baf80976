import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { createContainer } from '../container.ts';
import {
  checkUpgradePath,
  type MigrationState,
  migrate,
  MigrationError,
  migrationStatus,
  planDown,
  revertLast,
  SQL_DIR,
} from '../core/db/migrate.ts';
import { configFrom, type GlobalFlags, run } from './common.ts';

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** Asks on a terminal; elsewhere `--yes` is required. */
async function approved(yes: boolean | undefined, question: string, what: string): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY) throw new MigrationError(`${what}: pass --yes to proceed non-interactively`);
  return confirm(question);
}

function flags(s: MigrationState): string {
  const out: string[] = [];
  if (s.requiredByCode) out.push('required-by-code');
  if (s.steppingStone) out.push(`stepping-stone ${s.steppingStone}`);
  if (!s.transactional) out.push('no-transaction');
  if (s.down) out.push('has-down');
  return out.length ? `  [${out.join(', ')}]` : '';
}

async function withContainer(
  program: Command,
  checkDialect: boolean,
  fn: (c: Awaited<ReturnType<typeof createContainer>>) => Promise<void>,
) {
  const c = await createContainer({
    config: configFrom(program.opts<GlobalFlags>()),
    checkDialect,
    autoMigrate: false,
  });
  try {
    await fn(c);
  } finally {
    await c.close();
  }
}

async function down(program: Command, dir: string, o: { yes?: boolean; force?: boolean }): Promise<void> {
  if (!o.force) {
    throw new MigrationError(
      'migrate sql down refused: migrations are forward-only; restore a backup to go back (--force reverts the newest migration, if it has a down section)',
    );
  }
  await withContainer(program, true, async (c) => {
    const plan = await planDown(c.pool, dir);
    process.stderr.write(
      `WARNING: reverting ${plan.file.file} runs its down section and ${
        plan.drops.length
          ? `drops: ${plan.drops.join(', ')}`
          : 'drops nothing by name (read the section before you go on)'
      }. Data removed this way is lost; a backup restore is the supported way back.\n`,
    );
    if (!(await approved(o.yes, `Revert ${plan.file.file}? [y/N] `, 'migrate sql down'))) {
      process.stdout.write('nothing reverted\n');
      return;
    }
    process.stdout.write(`reverted ${await revertLast(c.pool, dir)}\n`);
  });
}

async function up(program: Command, dir: string, o: { yes?: boolean }): Promise<void> {
  await withContainer(program, true, async (c) => {
    const states = await migrationStatus(c.pool, dir);
    checkUpgradePath(states);
    const pending = states.filter((s) => s.status === 'pending');
    for (const p of pending) process.stdout.write(`pending  ${p.file}${flags(p)}\n`);
    if (pending.length && !(await approved(o.yes, 'Apply these migrations? [y/N] ', 'migrate sql'))) {
      process.stdout.write('nothing applied\n');
      return;
    }
    const r = await migrate(c.pool, { dir, onApply: (f) => process.stdout.write(`applying ${f}\n`) });
    process.stdout.write(
      r.applied.length ? `applied ${r.applied.length} migration(s)\n` : 'the database is up to date\n',
    );
  });
}

export function registerMigrate(program: Command): void {
  const m = program.command('migrate').description('Database migrations');
  const dirOf = () => program.opts<GlobalFlags>().migrationsDir ?? SQL_DIR;
  m.command('sql')
    .argument('[direction]', 'up (the default); down is refused unless --force: migrations are forward-only')
    .description('Apply pending sql/ migrations and the job queue schema (runs the dialect check first)')
    .option('-y, --yes', 'apply without asking')
    .option('--force', 'with down: revert the newest migration through its down section, after a warning')
    .action((direction: string | undefined, o: { yes?: boolean; force?: boolean }) =>
      run(async () => {
        if (direction === 'down') return down(program, dirOf(), o);
        if (direction && direction !== 'up') throw new MigrationError(`migrate sql ${direction}: expected up or down`);
        return up(program, dirOf(), o);
      }),
    );
  m.command('status')
    .description('List applied and pending migrations')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) =>
      run(() =>
        withContainer(program, false, async (c) => {
          const st = await migrationStatus(c.pool, dirOf());
          if (o.json) {
            const rows = st.map(({ sql: _s, up: _u, down, ...rest }) => ({ ...rest, hasDown: down !== undefined }));
            process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
          } else for (const s of st) process.stdout.write(`${s.status.padEnd(8)} ${s.file}${flags(s)}\n`);
          const pending = st.filter((s) => s.status === 'pending').length;
          if (!o.json) process.stdout.write(pending ? `${pending} pending\n` : 'nothing pending\n');
          try {
            checkUpgradePath(st);
          } catch (e) {
            process.stderr.write(`${(e as Error).message}\n`);
          }
          if (st.some((s) => s.status === 'changed')) process.exitCode = 1;
        }),
      ),
    );
}
