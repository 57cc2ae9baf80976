/**
 * SQL migrations from `sql/NNNN_name.sql`, applied in order under an advisory lock. Each applied
 * file is recorded with the checksum of its statements (comments and layout left out, see
 * migration-checksum.ts); an applied file whose statements changed later is an error.
 * graphile-worker's own schema is migrated by graphile-worker.
 *
 * Markers, as comment lines in a file's header (the comment block before the first statement):
 * - `-- gatehouse:no-transaction`: runs outside a transaction, one statement at a time (for
 *   `CREATE INDEX CONCURRENTLY`); such files must be idempotent (`IF NOT EXISTS`).
 * - `-- gatehouse:required-by-code`: the code of this release cannot serve before the file is
 *   applied; `serve` refuses to start while it is pending. Files that create an index are
 *   required-by-code without the marker (queries rely on them; CockroachDB fails without them).
 * - `-- gatehouse:stepping-stone <yy.minor.patch>`: the file is the last migration of a release
 *   that must not be skipped. A database that has migrations applied but not this one cannot
 *   apply it together with later migrations: `migrate sql` refuses and names the release to
 *   install first. (A release that must be a stepping stone but has no schema change ships an
 *   empty marker migration, `SELECT 1;`.)
 * And one section marker: a line `-- gatehouse:down` ends the forward part; what follows is only
 * run by `migrate sql down --force` (migrations are forward-only; see upgrade docs).
 *
 * Engines: on CockroachDB (a pool created for a `cockroach://` DSN, see engine.ts) a file
 * `sql/cockroach/NNNN_name.sql` replaces `sql/NNNN_name.sql` where CockroachDB needs a different
 * statement (it is checksummed and recorded in its place; a variant without its PostgreSQL file is
 * an error). The migration lock there is a row lock on `gatehouse_migrate_lock` (no advisory
 * locks), and graphile-worker's schema is migrated only on a PostgreSQL pool (`queuePool`).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Logger as GraphileLogger, runMigrations } from 'graphile-worker';
import type pg from 'pg';
import { type Engine, engineOf } from './engine.ts';
import { checksumMatches, migrationChecksum } from './migration-checksum.ts';

export const SQL_DIR = resolve(import.meta.dirname, '../../../sql');
/** Sub-folder of the per-engine replacements of migration files (`sql/cockroach/NNNN_name.sql`). */
const VARIANT_DIR: Readonly<Record<Engine, string | undefined>> = {
  postgres: undefined,
  cockroach: 'cockroach',
};
const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const LOCK_KEY = 727_274_001; // arbitrary, constant: serialises concurrent `migrate sql` runs

export interface MigrationFile {
  version: number;
  name: string;
  file: string;
  /** The whole file. */
  sql: string;
  /** The forward part: everything before `-- gatehouse:down`. */
  up: string;
  /** The down section, when the file has one. */
  down: string | undefined;
  /** What the ledger records: the checksum of the statements and markers, not of the comments. */
  checksum: string;
  transactional: boolean;
  requiredByCode: boolean;
  /** The release this file makes a required stepping stone of. */
  steppingStone: string | undefined;
  /** Set when the file is an engine's replacement (`cockroach/NNNN_name.sql`). */
  variant?: string;
}

export interface MigrationState extends MigrationFile {
  status: 'applied' | 'pending' | 'changed';
  appliedAt?: Date;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

const DOWN = /^[ \t]*--[ \t]*gatehouse:down[ \t]*$/m;
const MARKER = /^--\s*gatehouse:([a-z-]+)(?:[ \t]+(\S+))?/;
const RELEASE = /^\d{2}\.\d+\.\d+$/;
const CREATES_INDEX = /\bCREATE\s+(?:UNIQUE\s+)?INDEX\b/i;

const withoutComments = (sql: string) =>
  sql
    .split('\n')
    .filter((l) => !/^\s*--/.test(l))
    .join('\n');

/** Markers of the header: the comment lines (and blank lines) before the first statement. */
function headerMarkers(sql: string, file: string): Map<string, string> {
  const markers = new Map<string, string>();
  for (const line of sql.split('\n')) {
    const l = line.trim();
    if (l === '') continue;
    if (!l.startsWith('--')) break;
    const m = MARKER.exec(l);
    if (m && m[1] !== 'down') markers.set(m[1] as string, m[2] ?? '');
  }
  const stone = markers.get('stepping-stone');
  if (stone !== undefined && !RELEASE.test(stone)) {
    throw new MigrationError(`${file}: gatehouse:stepping-stone needs a release number like 26.1.7`);
  }
  return markers;
}

export function parseMigration(file: string, sql: string): MigrationFile {
  const m = FILE.exec(file);
  if (!m) throw new MigrationError(`${file} is not named NNNN_name.sql`);
  const cut = DOWN.exec(sql);
  const up = cut ? sql.slice(0, cut.index) : sql;
  const down = cut ? sql.slice(cut.index + cut[0].length).trim() : undefined;
  const markers = headerMarkers(sql, file);
  return {
    version: Number(m[1]),
    name: m[2] as string,
    file,
    sql,
    up,
    down: down || undefined,
    checksum: migrationChecksum(sql),
    transactional: !markers.has('no-transaction'),
    requiredByCode: markers.has('required-by-code') || CREATES_INDEX.test(withoutComments(up)),
    steppingStone: markers.get('stepping-stone'),
  };
}

export function listMigrationFiles(dir = SQL_DIR, engine: Engine = 'postgres'): MigrationFile[] {
  const out: MigrationFile[] = [];
  const files = readdirSync(dir).sort();
  const sub = VARIANT_DIR[engine];
  const variants =
    sub && existsSync(join(dir, sub))
      ? new Set(readdirSync(join(dir, sub)).filter((f) => FILE.test(f)))
      : new Set<string>();
  for (const v of variants) {
    if (!files.includes(v)) throw new MigrationError(`${sub}/${v} replaces no migration: ${v} is not in ${dir}`);
  }
  for (const file of files) {
    if (!FILE.test(file)) continue;
    if (sub && variants.has(file)) {
      out.push({ ...parseMigration(file, readFileSync(join(dir, sub, file), 'utf8')), variant: `${sub}/${file}` });
    } else out.push(parseMigration(file, readFileSync(join(dir, file), 'utf8')));
  }
  const seen = new Set<number>();
  for (const f of out) {
    if (seen.has(f.version)) throw new MigrationError(`two migrations share version ${f.version} in ${dir}`);
    seen.add(f.version);
  }
  return out;
}

const LEDGER = `CREATE TABLE IF NOT EXISTS gatehouse_schema_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  checksum text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

async function applied(
  client: pg.ClientBase,
): Promise<Map<number, { checksum: string; applied_at: Date; name: string }>> {
  // information_schema rather than to_regclass(): the same answer on PostgreSQL and CockroachDB.
  const exists = await client.query(
    "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'gatehouse_schema_migrations'",
  );
  if (!exists.rows.length) return new Map();
  const { rows } = await client.query('SELECT version, name, checksum, applied_at FROM gatehouse_schema_migrations');
  return new Map(rows.map((r) => [Number(r.version), r]));
}

type Ledger = Map<number, { checksum: string; applied_at: Date; name: string }>;

function statesOf(files: MigrationFile[], done: Ledger): MigrationState[] {
  return files.map((f) => {
    const row = done.get(f.version);
    if (!row) return { ...f, status: 'pending' as const };
    return {
      ...f,
      status: checksumMatches(row.checksum, f.sql) ? ('applied' as const) : ('changed' as const),
      appliedAt: row.applied_at,
    };
  });
}

export async function migrationStatus(pool: pg.Pool, dir = SQL_DIR): Promise<MigrationState[]> {
  const files = listMigrationFiles(dir, engineOf(pool));
  const client = await pool.connect();
  try {
    return statesOf(files, await applied(client));
  } finally {
    client.release();
  }
}

/**
 * Refuses to jump over a stepping-stone release: a database that has migrations applied (not a
 * fresh install) must have applied the stone's migration before any later one is applied. Throws
 * a `MigrationError` naming the release to install first (the oldest such stone).
 */
export function checkUpgradePath(states: readonly MigrationState[]): void {
  if (!states.some((s) => s.status !== 'pending')) return; // a fresh database installs everything at once
  const newest = Math.max(...states.map((s) => s.version));
  const stone = states.find((s) => s.status === 'pending' && s.steppingStone && s.version < newest);
  if (stone) {
    throw new MigrationError(
      `migrate sql refused: release ${stone.steppingStone} is a required stepping stone and this database has not reached it; install release ${stone.steppingStone}, run its gatehouse migrate sql, then upgrade to this release`,
    );
  }
}

/** Pending migrations the running code cannot serve without (markers and index creation). */
export const pendingRequiredByCode = (states: readonly MigrationState[]): MigrationState[] =>
  states.filter((s) => s.status === 'pending' && s.requiredByCode);

/** `serve`'s startup rule: refuse (one line naming `gatehouse migrate sql`) while such migrations are pending. */
export function assertServable(states: readonly MigrationState[]): void {
  const required = pendingRequiredByCode(states);
  if (required.length) {
    throw new MigrationError(
      `refusing to start: ${required.length} pending migration(s) that this release's queries need (${required.map((s) => s.file).join(', ')}); run gatehouse migrate sql first`,
    );
  }
}

/** What a down section drops, one item per line (`table fx_things`, `column fx_things.name`, …). */
export function describeDrops(down: string): string[] {
  const out: string[] = [];
  const name = '("[^"]+"|[\\w.]+)';
  const patterns: Array<[RegExp, (m: RegExpExecArray) => string]> = [
    [
      new RegExp(
        `\\bALTER\\s+TABLE\\s+(?:IF\\s+EXISTS\\s+)?(?:ONLY\\s+)?${name}\\s+DROP\\s+(COLUMN|CONSTRAINT)\\s+(?:IF\\s+EXISTS\\s+)?${name}`,
        'gi',
      ),
      (m) => `${(m[2] as string).toLowerCase()} ${m[1]}.${m[3]}`,
    ],
    [
      new RegExp(
        `\\bDROP\\s+(TABLE|INDEX|VIEW|MATERIALIZED\\s+VIEW|SEQUENCE|TYPE|FUNCTION|SCHEMA|TRIGGER|EXTENSION)\\s+(?:CONCURRENTLY\\s+)?(?:IF\\s+EXISTS\\s+)?${name}`,
        'gi',
      ),
      (m) => `${(m[1] as string).toLowerCase().replace(/\s+/g, ' ')} ${m[2]}`,
    ],
    [new RegExp(`\\b(?:TRUNCATE(?:\\s+TABLE)?|DELETE\\s+FROM)\\s+${name}`, 'gi'), (m) => `rows of ${m[1]}`],
  ];
  const sql = withoutComments(down);
  for (const [re, fmt] of patterns) for (let m = re.exec(sql); m; m = re.exec(sql)) out.push(fmt(m));
  return out;
}

/** Statements of a no-transaction file: split on `;` at the end of a line. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((s) =>
      s
        .split('\n')
        .filter((l) => !/^\s*--/.test(l))
        .join('\n')
        .trim(),
    )
    .filter(Boolean);
}

export interface MigrateResult {
  applied: string[];
}

/** A graphile-worker logger that drops its chatter; callers pass their own to see it. */
export const quietGraphileLogger = new GraphileLogger(() => () => {});

export interface MigrateOptions {
  dir?: string;
  onApply?: (file: string) => void;
  /** After each migration, with how long it took (ms). */
  onApplied?: (file: string, ms: number) => void;
  graphileLogger?: GraphileLogger;
  /**
   * The PostgreSQL pool of the job queue when it is not `pool` (`queue.dsn`): graphile-worker's
   * schema is migrated there. Without it, on PostgreSQL `pool`; on CockroachDB nowhere.
   */
  queuePool?: pg.Pool;
}

const RECORD = 'INSERT INTO gatehouse_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)';

/** Runs `sql` in one transaction together with `ledger`, or statement by statement for no-transaction files. */
async function runFile(
  client: pg.ClientBase,
  f: MigrationFile,
  sql: string,
  ledger: [string, unknown[]],
  what: string,
): Promise<void> {
  if (f.transactional) {
    await client.query('BEGIN');
    try {
      await client.query(sql);
      await client.query(...ledger);
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw new MigrationError(`${what} ${f.file} failed: ${(e as Error).message}`);
    }
    return;
  }
  try {
    for (const stmt of splitStatements(sql)) await client.query(stmt);
  } catch (e) {
    throw new MigrationError(`${what} ${f.file} failed: ${(e as Error).message}`);
  }
  await client.query(...ledger);
}

/** How long CockroachDB's migration lease lasts without renewal (renewed every quarter of it). */
const LEASE_MS = 120_000;

/**
 * CockroachDB's migration lock: a lease in the one row of `gatehouse_migrate_lock`, taken by an
 * upsert that only succeeds when the row is free or its lease ran out, renewed while migrations
 * run, and deleted at the end. Waiting migrators poll (every 250-500 ms) and hold no transaction
 * meanwhile; a migrator that died leaves a lease that expires.
 */
async function cockroachLock(pool: pg.Pool): Promise<() => Promise<void>> {
  const create =
    'CREATE TABLE IF NOT EXISTS gatehouse_migrate_lock (id integer PRIMARY KEY, holder text NOT NULL, lease_until timestamptz NOT NULL)';
  // Two first migrators may race on the table's creation; the loser finds it on its second try.
  await pool.query(create).catch(() => pool.query(create));
  const me = randomUUID();
  for (;;) {
    const r = await pool.query(
      `INSERT INTO gatehouse_migrate_lock (id, holder, lease_until) VALUES (1, $1, now() + $2::int8 * interval '1 millisecond')
       ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
       WHERE gatehouse_migrate_lock.lease_until < now() RETURNING holder`,
      [me, LEASE_MS],
    );
    if (r.rowCount === 1) break;
    await new Promise((done) => setTimeout(done, 250 + Math.random() * 250));
  }
  const renew = setInterval(() => {
    pool
      .query(
        "UPDATE gatehouse_migrate_lock SET lease_until = now() + $2::int8 * interval '1 millisecond' WHERE id = 1 AND holder = $1",
        [me, LEASE_MS],
      )
      .catch(() => {});
  }, LEASE_MS / 4);
  renew.unref();
  return async () => {
    clearInterval(renew);
    await pool.query('DELETE FROM gatehouse_migrate_lock WHERE id = 1 AND holder = $1', [me]).catch(() => {});
  };
}

/** Runs `fn` holding the migration lock (advisory on PostgreSQL), with the ledger table present. */
async function locked<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  if (engineOf(pool) === 'cockroach') {
    const release = await cockroachLock(pool);
    try {
      const client = await pool.connect();
      try {
        await client.query(LEDGER);
        return await fn(client);
      } finally {
        client.release();
      }
    } finally {
      await release();
    }
  }
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    try {
      await client.query(LEDGER);
      return await fn(client);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    }
  } finally {
    client.release();
  }
}

export async function migrate(pool: pg.Pool, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const engine = engineOf(pool);
  const files = listMigrationFiles(opts.dir ?? SQL_DIR, engine);
  const result: MigrateResult = { applied: [] };
  await locked(pool, async (client) => {
    const done = await applied(client);
    const states = statesOf(files, done);
    const changed = states.find((s) => s.status === 'changed');
    if (changed) {
      throw new MigrationError(
        `migration ${changed.file} was changed after it was applied (checksum differs); applied migrations must never be edited, add a new one instead`,
      );
    }
    checkUpgradePath(states);
    // Rows an earlier release recorded (whole-file checksums) get this release's checksum, so that
    // later comment edits leave them applied too.
    for (const f of states) {
      if (f.status === 'applied' && done.get(f.version)?.checksum !== f.checksum) {
        await client.query('UPDATE gatehouse_schema_migrations SET checksum = $2 WHERE version = $1', [
          f.version,
          f.checksum,
        ]);
      }
    }
    for (const f of states) {
      if (f.status !== 'pending') continue;
      opts.onApply?.(f.file);
      const started = performance.now();
      await runFile(client, f, f.up, [RECORD, [f.version, f.name, f.checksum]], 'migration');
      opts.onApplied?.(f.file, performance.now() - started);
      result.applied.push(f.file);
    }
  });
  const queuePool = opts.queuePool ?? (engine === 'postgres' ? pool : undefined);
  if (queuePool) await runMigrations({ pgPool: queuePool, logger: opts.graphileLogger ?? quietGraphileLogger });
  return result;
}

export interface DownPlan {
  file: MigrationFile;
  /** What the down section drops (see `describeDrops`). */
  drops: string[];
}

/**
 * The newest applied migration and what reverting it would drop. Throws when nothing is applied
 * or when that migration has no `-- gatehouse:down` section.
 */
export async function planDown(pool: pg.Pool, dir = SQL_DIR): Promise<DownPlan> {
  const states = (await migrationStatus(pool, dir)).filter((s) => s.status !== 'pending');
  const last = states[states.length - 1];
  if (!last) throw new MigrationError('migrate sql down: no migration is applied');
  if (!last.down) {
    throw new MigrationError(
      `migrate sql down: ${last.file} has no -- gatehouse:down section and cannot be reverted; restore a backup instead`,
    );
  }
  return { file: last, drops: describeDrops(last.down) };
}

/** Runs the down section of the newest applied migration (`migrate sql down --force`). */
export async function revertLast(pool: pg.Pool, dir = SQL_DIR): Promise<string> {
  const plan = await planDown(pool, dir);
  return locked(pool, async (client) => {
    const newest = await client.query('SELECT max(version) AS v FROM gatehouse_schema_migrations');
    if (Number(newest.rows[0]?.v) !== plan.file.version) {
      throw new MigrationError(
        `migrate sql down: ${plan.file.file} is no longer the newest applied migration; check gatehouse migrate status`,
      );
    }
    const ledger: [string, unknown[]] = [
      'DELETE FROM gatehouse_schema_migrations WHERE version = $1',
      [plan.file.version],
    ];
    await runFile(client, plan.file, plan.file.down as string, ledger, 'reverting');
    return plan.file.file;
  });
}
