import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assertServable,
  checkUpgradePath,
  describeDrops,
  listMigrationFiles,
  MigrationError,
  type MigrationState,
  parseMigration,
} from '../../../src/core/db/migrate.ts';

const UPGRADE = resolve(import.meta.dirname, '../../fixtures/migrations/upgrade');

const state = (version: number, status: MigrationState['status'], extra: string[] = []): MigrationState => {
  const header = extra.map((m) => `-- gatehouse:${m}`).join('\n');
  const f = parseMigration(`${String(version).padStart(4, '0')}_m${version}.sql`, `${header}\nSELECT ${version};\n`);
  return { ...f, status };
};

describe('migration markers', () => {
  it('reads no-transaction, required-by-code, stepping-stone and down sections from the fixtures', () => {
    const files = listMigrationFiles(UPGRADE);
    expect(files.map((f) => f.requiredByCode)).toEqual([false, false, false, true, true]);
    expect(files.map((f) => f.steppingStone)).toEqual([undefined, undefined, '26.1.7', undefined, undefined]);
    expect(files.map((f) => f.transactional)).toEqual([true, true, true, false, true]);
    expect(files.map((f) => f.down)).toEqual([
      undefined,
      undefined,
      undefined,
      'DROP INDEX CONCURRENTLY IF EXISTS fx_up_accounts_email_idx;',
      'DROP TABLE fx_up_sessions;',
    ]);
    expect(files[4]?.up).not.toContain('DROP');
    expect(files[4]?.sql).toContain('DROP'); // the checksum covers the whole file
  });

  it('treats any index creation as required by the code, but not a commented one', () => {
    expect(parseMigration('0001_a.sql', 'CREATE UNIQUE INDEX a ON t (x);').requiredByCode).toBe(true);
    expect(parseMigration('0001_a.sql', 'create index concurrently a on t (x);').requiredByCode).toBe(true);
    expect(parseMigration('0001_a.sql', '-- CREATE INDEX later\nALTER TABLE t ADD c int;').requiredByCode).toBe(false);
    expect(
      parseMigration('0001_a.sql', 'CREATE TABLE t (id int);\n-- gatehouse:down\nCREATE INDEX i ON t (id);')
        .requiredByCode,
    ).toBe(false);
  });

  it('only reads markers from the header comment block', () => {
    const f = parseMigration('0001_a.sql', 'SELECT 1;\n-- gatehouse:no-transaction\n-- gatehouse:stepping-stone 1.2.3');
    expect(f.transactional).toBe(true);
    expect(f.steppingStone).toBeUndefined();
  });

  it('rejects a stepping-stone marker without a release number', () => {
    expect(() => parseMigration('0001_a.sql', '-- gatehouse:stepping-stone soon\nSELECT 1;')).toThrow(MigrationError);
    expect(() => parseMigration('0001_a.sql', '-- gatehouse:stepping-stone 26.1\nSELECT 1;')).toThrow(
      /needs a release number like 26\.1\.7/,
    );
  });
});

describe('upgrade rules', () => {
  it('lets a fresh database install everything, stepping stones included', () => {
    expect(() =>
      checkUpgradePath([state(1, 'pending'), state(2, 'pending', ['stepping-stone 25.4.3']), state(3, 'pending')]),
    ).not.toThrow();
  });

  it('refuses to jump over a pending stepping stone, naming the oldest one', () => {
    const states = [
      state(1, 'applied'),
      state(2, 'pending', ['stepping-stone 25.4.3']),
      state(3, 'pending', ['stepping-stone 25.4.5']),
      state(4, 'pending'),
    ];
    expect(() => checkUpgradePath(states)).toThrow(
      'migrate sql refused: release 25.4.3 is a required stepping stone and this database has not reached it; install release 25.4.3, run its gatehouse migrate sql, then upgrade to this release',
    );
  });

  it('allows upgrading to exactly the stepping-stone release, and past an applied one', () => {
    expect(() => checkUpgradePath([state(1, 'applied'), state(2, 'pending', ['stepping-stone 26.1.7'])])).not.toThrow();
    expect(() =>
      checkUpgradePath([state(1, 'applied'), state(2, 'applied', ['stepping-stone 26.1.7']), state(3, 'pending')]),
    ).not.toThrow();
  });

  it('refuses to serve while a required-by-code migration is pending, in one line naming migrate sql', () => {
    expect(() => assertServable([state(1, 'applied'), state(2, 'pending')])).not.toThrow();
    expect(() => assertServable([state(1, 'applied'), state(2, 'pending', ['required-by-code'])])).toThrow(
      /^refusing to start: 1 pending migration\(s\) that this release's queries need \(0002_m2\.sql\); run gatehouse migrate sql first$/,
    );
  });

  it('describes what a down section drops', () => {
    expect(
      describeDrops(`-- undo
DROP TABLE IF EXISTS fx_a;
drop index concurrently fx_a_idx;
ALTER TABLE fx_b DROP COLUMN IF EXISTS c1;
ALTER TABLE ONLY fx_b DROP CONSTRAINT fx_b_fk;
DROP MATERIALIZED VIEW "Fx View";
DELETE FROM fx_c WHERE true;
TRUNCATE fx_d;`),
    ).toEqual([
      'column fx_b.c1',
      'constraint fx_b.fx_b_fk',
      'table fx_a',
      'index fx_a_idx',
      'materialized view "Fx View"',
      'rows of fx_c',
      'rows of fx_d',
    ]);
    expect(describeDrops('UPDATE t SET a = 1;')).toEqual([]);
  });
});
