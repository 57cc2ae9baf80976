import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listMigrationFiles,
  migrate,
  MigrationError,
  migrationStatus,
  splitStatements,
} from '../../../src/core/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const FIXTURES = resolve(import.meta.dirname, '../../fixtures/migrations/ok');

describe('sql/ migrations', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let projectDb: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    projectDb = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 3 });
    pool.on('error', () => {});
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
    await projectDb.drop();
  });

  it('applies a fresh set in order, recording checksums, then is a no-op on re-run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-mig-'));
    cpSync(FIXTURES, dir, { recursive: true });
    expect((await migrationStatus(pool, dir)).map((s) => s.status)).toEqual(['pending', 'pending']);
    const first = await migrate(pool, { dir });
    expect(first.applied).toEqual(['0001_things.sql', '0002_things_name_idx.sql']);
    const { rows } = await pool.query(
      `SELECT indexname FROM pg_indexes WHERE tablename = 'fx_things' AND indexname = 'fx_things_name_idx'`,
    );
    expect(rows).toHaveLength(1);
    const ledger = await pool.query(
      'SELECT version, checksum FROM gatehouse_schema_migrations WHERE version IN (1, 2) ORDER BY version',
    );
    expect(ledger.rows.map((r) => r.checksum)).toEqual(listMigrationFiles(dir).map((f) => f.checksum));
    const again = await migrate(pool, { dir });
    expect(again.applied).toEqual([]);
    expect((await pool.query('SELECT count(*)::int AS n FROM fx_things')).rows[0].n).toBe(2);
    expect((await migrationStatus(pool, dir)).map((s) => s.status)).toEqual(['applied', 'applied']);

    // An applied file that changed is an error naming the file.
    writeFileSync(join(dir, '0001_things.sql'), '-- edited\nCREATE TABLE fx_things (id int);\n');
    await expect(migrate(pool, { dir })).rejects.toThrow(MigrationError);
    await expect(migrate(pool, { dir })).rejects.toThrow(/0001_things\.sql was changed after it was applied/);
    expect((await migrationStatus(pool, dir))[0]?.status).toBe('changed');
  });

  it('marks `-- gatehouse:no-transaction` files and splits their statements', () => {
    const files = listMigrationFiles(FIXTURES);
    expect(files.map((f) => f.transactional)).toEqual([true, false]);
    expect(splitStatements('-- c\nCREATE INDEX a ON t (x);\n\nCREATE INDEX b ON t (y);\n')).toEqual([
      'CREATE INDEX a ON t (x)',
      'CREATE INDEX b ON t (y)',
    ]);
  });

  it('rolls back a failing transactional migration completely', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-mig-'));
    writeFileSync(join(dir, '0099_bad.sql'), 'CREATE TABLE fx_bad (id int);\nSELECT no_such_function();\n');
    await expect(migrate(pool, { dir })).rejects.toThrow(/0099_bad\.sql failed/);
    expect((await pool.query(`SELECT to_regclass('fx_bad') AS t`)).rows[0].t).toBeNull();
  });

  it('the project migrations are applied in the template, including the job queue schema', async () => {
    const p = new pg.Pool({ connectionString: projectDb.url, max: 1 });
    p.on('error', () => {});
    try {
      const st = await migrationStatus(p);
      expect(st.length).toBeGreaterThan(0);
      expect(st.every((s) => s.status === 'applied')).toBe(true);
      expect((await p.query(`SELECT to_regclass('graphile_worker.jobs') AS t`)).rows[0].t).not.toBeNull();
      expect((await migrate(p)).applied).toEqual([]);
    } finally {
      await p.end();
    }
  });
});
