import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SQL_DIR } from '../../../src/core/db/migrate.ts';
import {
  checksumMatches,
  migrationChecksum,
  normalizeSql,
  wholeFileChecksum,
} from '../../../src/core/db/migration-checksum.ts';

const same = (a: string, b: string) => expect(migrationChecksum(a), `${a}\n---\n${b}`).toBe(migrationChecksum(b));
const differ = (a: string, b: string) => expect(migrationChecksum(a), `${a}\n---\n${b}`).not.toBe(migrationChecksum(b));

/** The whole-file checksums earlier releases recorded for the files whose comments were rewritten since. */
const SHIPPED_BEFORE_REWORDING: Record<string, string> = {
  '0050_oauth2_refresh_used_times_nullable.sql': 'ddc4e7c88c769601a4b2e0e1c6843a9c21da0da8a6a2319f376f3ca613d8e541',
  '0052_oauth2_access_tokens_subject_client_idx.sql':
    'ba6d01f3fa6b82fd45bf4eb1e566ef0b294ceeb62d7637af715823719b6eb7f7',
  '0053_oauth2_refresh_tokens_subject_client_idx.sql':
    '94abda50ff4f50eb78eeab756fc4fe64c0ef371808a1d0c08b993f3c7c565fb6',
  '0060_oauth2_flows_logout_clients_idx.sql': '3ed0965de16f1cdd23dde018802faa29d678ae1f1b4fcfca38b5b551d3bae4bc',
  '0100_dsync.sql': '61ddc5b9ee2bd26be391501fce3f06b9b06a142942b3400bf1be312a706b9a3f',
  '0150_dsync_webhooks.sql': '83580f5ef37ab834b80bf17ffebacdd2f7d6e19ae8dcd90cb3142ea1dee30d07',
  '0170_dsync_google.sql': '277ab86fd7069cd69204abe4e96c7b0a2a639352ddfdf3b170ec1efb487c17d7',
};

describe('migration checksum', () => {
  it('leaves out comments, blank lines and indentation', () => {
    const base =
      'CREATE TABLE t (\n  id int PRIMARY KEY,\n  name text NOT NULL\n);\nCREATE INDEX t_name ON t (name);\n';
    same(base, `-- a table\n${base}`);
    same(base, base.replace('PRIMARY KEY,', 'PRIMARY KEY, -- the key'));
    same(base, `/* a block /* nested */ comment */\n${base}`);
    same(base, base.replace(/\n {2}/g, '\n\t\t').replace(/\n/g, '\n\n'));
    same(base, base.replace('(\n  id', '(id').replace(',\n  name', ', name'));
    same(base, base.replace('(name)', '( name )'));
  });

  it('sees every change to a statement', () => {
    const base = "CREATE TABLE t (id int, name text DEFAULT 'x');";
    differ(base, base.replace('id int', 'id bigint'));
    differ(base, base.replace("'x'", "'y'"));
    differ(base, base.replace('CREATE TABLE', 'CREATETABLE'));
    differ(base, `${base}\nDROP TABLE t;`);
    differ(base, base.replace('name text', '"name" text'));
  });

  it('keeps literals, quoted identifiers and dollar-quoted bodies exactly, comment-like text included', () => {
    differ("SELECT '-- a';", "SELECT '-- b';");
    differ("SELECT 'a  b';", "SELECT 'a b';");
    differ("SELECT 'it''s -- x';", "SELECT 'it''s -- y';");
    differ("SELECT E'\\' -- x';", "SELECT E'\\' -- y';");
    differ('SELECT 1 AS "a  b";', 'SELECT 1 AS "a b";');
    const fn = (body: string) => `CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $fn$ ${body} $fn$;`;
    differ(fn('SELECT 1 /* x */'), fn('SELECT 1 /* y */'));
    differ('DO $$ BEGIN PERFORM 1; -- x\nEND $$;', 'DO $$ BEGIN PERFORM 1; -- y\nEND $$;');
    expect(normalizeSql("SELECT $1::text, 'x' -- note\n FROM t;")).toBe("SELECT $1::text,'x'FROM t;");
  });

  it('counts the gatehouse markers, which change how a file runs', () => {
    const index = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a);';
    differ(index, `-- gatehouse:no-transaction\n${index}`);
    differ(`${index}\n-- gatehouse:down\nDROP INDEX i;`, `${index}\nDROP INDEX i;`);
    same(`-- gatehouse:no-transaction\n${index}`, `--   gatehouse:no-transaction  \n\n-- why\n${index}`);
  });

  it('accepts what earlier releases recorded, the whole-file SHA-256, and this checksum', () => {
    const sql = '-- a table\nCREATE TABLE t (id int);\n';
    expect(migrationChecksum(sql)).toMatch(/^sql:[0-9a-f]{64}$/);
    expect(checksumMatches(migrationChecksum(sql), sql)).toBe(true);
    expect(checksumMatches(wholeFileChecksum(sql), sql)).toBe(true);
    expect(checksumMatches(migrationChecksum(sql), sql.replace('a table', 'the table'))).toBe(true);
    // A whole-file checksum only matches the file as it was, unless the file is listed as reworded.
    expect(checksumMatches(wholeFileChecksum(sql), sql.replace('a table', 'the table'))).toBe(false);
    expect(checksumMatches(migrationChecksum(sql), sql.replace('id int', 'id bigint'))).toBe(false);
  });

  it('accepts the whole-file checksums of the shipped files whose comments were rewritten, while their statements stay', () => {
    for (const [file, recorded] of Object.entries(SHIPPED_BEFORE_REWORDING)) {
      const sql = readFileSync(join(SQL_DIR, file), 'utf8');
      expect(wholeFileChecksum(sql), file).not.toBe(recorded);
      expect(checksumMatches(recorded, sql), file).toBe(true);
      // A statement changed as well: detected.
      expect(checksumMatches(recorded, sql.replace(/;\s*$/, ';\nSELECT 1;\n')), file).toBe(false);
    }
  });

  it('shipped files: comments state their rules (no pointers to documents outside the repository)', () => {
    for (const file of readdirSync(SQL_DIR).filter((f) => f.endsWith('.sql'))) {
      const comments = readFileSync(join(SQL_DIR, file), 'utf8')
        .split('\n')
        .filter((l) => l.trimStart().startsWith('--'))
        .join('\n');
      expect(comments, file).not.toMatch(/\bseed\b|\bQ\d+\b|spec\/|\bissues?\b|#\d/i);
    }
  });
});
