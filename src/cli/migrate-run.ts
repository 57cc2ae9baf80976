/** What `gatehouse migrate` runs (loaded by its actions; the definitions are in migrate.ts). */
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { createContainer } from '../container.ts';
import {
  checkUpgradePath,
  MigrationError,
  type MigrationState,
  migrate,
  migrationStatus,
  planDown,
  revertLast,
  SQL_DIR,
} from '../core/db/migrate.ts';
import type { GlobalFlags } from './common.ts';
import { withEphemeralSecret } from './config.ts';

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

/** Hydra's DSN selection: `-e` reads it from the environment, else a positional DSN, else the config. */
interface DsnChoice {
  dsn?: string | undefined;
  readFromEnv?: boolean;
}

async function withContainer(
  program: Command,
  checkDialect: boolean,
  fn: (c: Awaited<ReturnType<typeof createContainer>>) => Promise<void>,
  choice: DsnChoice = {},
) {
  const g = program.opts<GlobalFlags>();
  const positional = choice.readFromEnv ? undefined : choice.dsn;
  const config = loadConfig({
    needsSecrets: false,
    ...(g.config ? { file: g.config } : {}),
    overrides: { ...(g.dev ? { dev: true } : {}), ...(positional ? { dsn: positional } : {}) },
  });
  if (choice.readFromEnv && process.env.DSN === undefined) {
    throw new MigrationError('--read-from-env: the DSN environment variable is not set');
  }
  const c = await createContainer({ config: withEphemeralSecret(config), checkDialect, autoMigrate: false });
  try {
    await fn(c);
  } finally {
    await c.close();
  }
}

async function down(program: Command, dir: string, o: SqlFlags): Promise<void> {
  if (!o.force) {
    throw new MigrationError(
      'migrate sql down refused: migrations are forward-only; restore a backup to go back (--force reverts the newest migration, if it has a down section)',
    );
  }
  await withContainer(
    program,
    true,
    async (c) => {
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
    },
    o,
  );
}

export interface SqlFlags extends DsnChoice {
  yes?: boolean;
  force?: boolean;
}

const ms = (n: number) => (n < 1000 ? `${Math.round(n)}ms` : `${(n / 1000).toFixed(2)}s`);

async function up(program: Command, dir: string, o: SqlFlags): Promise<void> {
  await withContainer(
    program,
    true,
    async (c) => {
      const states = await migrationStatus(c.pool, dir);
      checkUpgradePath(states);
      const pending = states.filter((s) => s.status === 'pending');
      for (const p of pending) process.stdout.write(`pending  ${p.file}${flags(p)}\n`);
      if (pending.length && !(await approved(o.yes, 'Apply these migrations? [y/N] ', 'migrate sql'))) {
        process.stdout.write('nothing applied\n');
        return;
      }
      const started = performance.now();
      const r = await migrate(c.pool, {
        dir,
        onApply: (f) => process.stdout.write(`applying ${f} … `),
        onApplied: (_f, took) => process.stdout.write(`done in ${ms(took)}\n`),
      });
      process.stdout.write(
        r.applied.length
          ? `applied ${r.applied.length} migration(s) in ${ms(performance.now() - started)}\n`
          : 'the database is up to date\n',
      );
      if (c.queue.mode === 'outbox') {
        const { prepareQueueDatabase } = await import('../core/jobs/relay.ts');
        await prepareQueueDatabase(c.queue.pool);
        process.stdout.write('the queue database (queue.dsn) is up to date\n');
      }
    },
    o,
  );
}

const dirOf = (program: Command) => program.opts<GlobalFlags>().migrationsDir ?? SQL_DIR;

/** `migrate sql [up|down] [DSN]`. */
export async function migrateSql(program: Command, args: string[], o: SqlFlags): Promise<void> {
  const dir = dirOf(program);
  const [first, ...rest] = args;
  const direction = first === 'up' || first === 'down' ? first : undefined;
  const dsns = direction ? rest : args;
  if (dsns.length > 1) throw new MigrationError(`migrate sql: expected [up|down] [DSN], got ${args.length} arguments`);
  if (dsns[0] !== undefined && !/^[a-z][a-z0-9+.-]*:\/\/|^memory$/i.test(dsns[0])) {
    throw new MigrationError(`migrate sql ${dsns[0]}: expected up, down or a DSN (postgres://…)`);
  }
  const flags = { ...o, dsn: dsns[0] };
  if (direction === 'down') return down(program, dir, flags);
  return up(program, dir, flags);
}

/** `migrate status [dsn]`. */
export async function migrateStatus(
  program: Command,
  dsn: string | undefined,
  o: { json?: boolean; readFromEnv?: boolean },
): Promise<void> {
  const dir = dirOf(program);
  await withContainer(
    program,
    false,
    async (c) => {
      const st = await migrationStatus(c.pool, dir);
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
    },
    { dsn, ...(o.readFromEnv ? { readFromEnv: true } : {}) },
  );
}
