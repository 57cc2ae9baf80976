import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { createContainer } from '../container.ts';
import { migrate, migrationStatus } from '../core/db/migrate.ts';
import { configFrom, type GlobalFlags, run } from './common.ts';

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

export function registerMigrate(program: Command): void {
  const m = program.command('migrate').description('Database migrations');
  m.command('sql')
    .argument('[direction]', 'up (the default); down is refused: migrations are forward-only')
    .description('Apply pending sql/ migrations and the job queue schema (runs the dialect check first)')
    .option('-y, --yes', 'apply without asking')
    .action((direction: string | undefined, o: { yes?: boolean }) =>
      run(async () => {
        if (direction && direction !== 'up') {
          throw new Error(`migrate sql ${direction}: migrations are forward-only; restore a backup to go back`);
        }
        const c = await createContainer({
          config: configFrom(program.opts<GlobalFlags>()),
          checkDialect: true,
          autoMigrate: false,
        });
        try {
          const pending = (await migrationStatus(c.pool)).filter((s) => s.status === 'pending');
          for (const p of pending)
            process.stdout.write(`pending  ${p.file}${p.transactional ? '' : '  (outside a transaction)'}\n`);
          if (pending.length && !o.yes) {
            if (!process.stdin.isTTY) throw new Error('migrate sql: pass --yes to apply migrations non-interactively');
            if (!(await confirm('Apply these migrations? [y/N] '))) {
              process.stdout.write('nothing applied\n');
              return;
            }
          }
          const r = await migrate(c.pool, { onApply: (f) => process.stdout.write(`applying ${f}\n`) });
          process.stdout.write(
            r.applied.length ? `applied ${r.applied.length} migration(s)\n` : 'the database is up to date\n',
          );
        } finally {
          await c.close();
        }
      }),
    );
  m.command('status')
    .description('List applied and pending migrations')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) =>
      run(async () => {
        const c = await createContainer({ config: configFrom(program.opts<GlobalFlags>()), autoMigrate: false });
        try {
          const st = await migrationStatus(c.pool);
          if (o.json)
            process.stdout.write(
              `${JSON.stringify(
                st.map(({ sql: _s, ...rest }) => rest),
                null,
                2,
              )}\n`,
            );
          else for (const s of st) process.stdout.write(`${s.status.padEnd(8)} ${s.file}\n`);
          if (st.some((s) => s.status === 'changed')) process.exitCode = 1;
        } finally {
          await c.close();
        }
      }),
    );
}
