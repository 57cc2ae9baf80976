/**
 * SQL migrations from `sql/NNNN_name.sql`, applied in order under an advisory lock. Each applied
 * file is recorded with its SHA-256; an applied file that changed later is an error. A file whose
 * first lines contain `-- gatehouse:no-transaction` runs outside a transaction, one statement at a
 * time (for `CREATE INDEX CONCURRENTLY`); such files must be idempotent (`IF NOT EXISTS`).
 * graphile-worker's own schema is migrated by graphile-worker.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Logger as GraphileLogger, runMigrations } from 'graphile-worker';
import type pg from 'pg';

export const SQL_DIR = resolve(import.meta.dirname, '../../../sql');
const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const LOCK_KEY = 727_274_001; // arbitrary, constant: serialises concurrent `migrate sql` runs

export interface MigrationFile {
  version: number;
  name: string;
  file: string;
  sql: string;
  checksum: string;
  transactional: boolean;
}

export interface MigrationState extends MigrationFile {
  status: 'applied' | 'pending' | 'changed';
  appliedAt?: Date;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export function listMigrationFiles(dir = SQL_DIR): MigrationFile[] {
  const out: MigrationFile[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = FILE.exec(file);
    if (!m) continue;
    const sql = readFileSync(join(dir, file), 'utf8');
    out.push({
      version: Number(m[1]),
      name: m[2] as string,
      file,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
      transactional: !/^\s*--\s*gatehouse:no-transaction\b/m.test(sql.split('\n').slice(0, 5).join('\n')),
    });
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
  const exists = await client.query(`SELECT to_regclass('gatehouse_schema_migrations') AS t`);
  if (!exists.rows[0]?.t) return new Map();
  const { rows } = await client.query('SELECT version, name, checksum, applied_at FROM gatehouse_schema_migrations');
  return new Map(rows.map((r) => [Number(r.version), r]));
}

export async function migrationStatus(pool: pg.Pool, dir = SQL_DIR): Promise<MigrationState[]> {
  const files = listMigrationFiles(dir);
  const client = await pool.connect();
  try {
    const done = await applied(client);
    return files.map((f) => {
      const row = done.get(f.version);
      if (!row) return { ...f, status: 'pending' as const };
      return {
        ...f,
        status: row.checksum === f.checksum ? ('applied' as const) : ('changed' as const),
        appliedAt: row.applied_at,
      };
    });
  } finally {
    client.release();
  }
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
  graphileLogger?: GraphileLogger;
}

export async function migrate(pool: pg.Pool, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const dir = opts.dir ?? SQL_DIR;
  const files = listMigrationFiles(dir);
  const client = await pool.connect();
  const result: MigrateResult = { applied: [] };
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    try {
      await client.query(LEDGER);
      const done = await applied(client);
      for (const f of files) {
        const row = done.get(f.version);
        if (row) {
          if (row.checksum !== f.checksum) {
            throw new MigrationError(
              `migration ${f.file} was changed after it was applied (checksum differs); applied migrations must never be edited, add a new one instead`,
            );
          }
          continue;
        }
        opts.onApply?.(f.file);
        if (f.transactional) {
          await client.query('BEGIN');
          try {
            await client.query(f.sql);
            await client.query(
              'INSERT INTO gatehouse_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)',
              [f.version, f.name, f.checksum],
            );
            await client.query('COMMIT');
          } catch (e) {
            await client.query('ROLLBACK').catch(() => {});
            throw new MigrationError(`migration ${f.file} failed: ${(e as Error).message}`);
          }
        } else {
          try {
            for (const stmt of splitStatements(f.sql)) await client.query(stmt);
          } catch (e) {
            throw new MigrationError(`migration ${f.file} failed: ${(e as Error).message}`);
          }
          await client.query('INSERT INTO gatehouse_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
            f.version,
            f.name,
            f.checksum,
          ]);
        }
        result.applied.push(f.file);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    }
  } finally {
    client.release();
  }
  await runMigrations({ pgPool: pool, logger: opts.graphileLogger ?? quietGraphileLogger });
  return result;
}
