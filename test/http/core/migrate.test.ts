import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listMigrationFiles,
  MigrationError,
  migrate,
  migrationStatus,
  SQL_DIR,
  splitStatements,
} from '../../../src/core/db/migrate.ts';
import { wholeFileChecksum } from '../../../src/core/db/migration-checksum.ts';
import { runCli } from '../../helpers/cli.ts';
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

  it('keeps migrating a database an earlier release recorded (whole-file checksums, comments rewritten since); a changed statement is still detected', {
    timeout: 120_000,
  }, async () => {
    // What earlier releases recorded: the SHA-256 of each whole file, as the file was then.
    const reworded: Record<string, string> = {
      '0052_oauth2_access_tokens_subject_client_idx.sql':
        'ba6d01f3fa6b82fd45bf4eb1e566ef0b294ceeb62d7637af715823719b6eb7f7',
      '0100_dsync.sql': '61ddc5b9ee2bd26be391501fce3f06b9b06a142942b3400bf1be312a706b9a3f',
    };
    const old = await createTestDatabase();
    const p = new pg.Pool({ connectionString: old.url, max: 2 });
    p.on('error', () => {});
    const ledger = async () =>
      new Map(
        (await p.query('SELECT version, checksum FROM gatehouse_schema_migrations')).rows.map((r) => [
          Number(r.version),
          r.checksum as string,
        ]),
      );
    try {
      for (const f of listMigrationFiles()) {
        const recorded = reworded[f.file] ?? wholeFileChecksum(readFileSync(join(SQL_DIR, f.file), 'utf8'));
        await p.query('UPDATE gatehouse_schema_migrations SET checksum = $2 WHERE version = $1', [f.version, recorded]);
      }
      expect((await migrationStatus(p)).filter((s) => s.status !== 'applied')).toEqual([]);
      const status = await runCli(['migrate', 'status', old.url], {});
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).not.toMatch(/^changed/m);

      // A real change to a statement of a reworded file is still detected, with the old checksum.
      const dir = mkdtempSync(join(tmpdir(), 'gh-mig-'));
      cpSync(SQL_DIR, dir, { recursive: true });
      const file = '0052_oauth2_access_tokens_subject_client_idx.sql';
      const shipped = readFileSync(join(SQL_DIR, file), 'utf8');
      writeFileSync(join(dir, file), shipped.replace('(nid, subject, client_id);', '(nid, subject);'));
      expect((await migrationStatus(p, dir)).find((s) => s.file === file)?.status).toBe('changed');
      await expect(migrate(p, { dir })).rejects.toThrow(
        /0052_oauth2_access_tokens_subject_client_idx\.sql was changed/,
      );

      // migrate sql applies nothing and records this release's checksums in place of the old ones.
      expect((await migrate(p)).applied).toEqual([]);
      const after = await ledger();
      for (const f of listMigrationFiles()) expect(after.get(f.version), f.file).toBe(f.checksum);

      // From then on a comment edit anywhere leaves the file applied; a statement change does not.
      writeFileSync(join(dir, file), `-- reworded again\n${shipped}`);
      writeFileSync(
        join(dir, '0001_networks.sql'),
        `-- a new comment\n${readFileSync(join(SQL_DIR, '0001_networks.sql'), 'utf8')}`,
      );
      expect((await migrationStatus(p, dir)).filter((s) => s.status !== 'applied')).toEqual([]);
      writeFileSync(join(dir, file), shipped.replace('(nid, subject, client_id);', '(nid, subject);'));
      expect((await migrationStatus(p, dir)).find((s) => s.file === file)?.status).toBe('changed');
    } finally {
      await p.end();
      await old.drop();
    }
  });
});
