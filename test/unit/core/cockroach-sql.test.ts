/**
 * Static CockroachDB check (no server needed): every migration as the migrator runs it on
 * CockroachDB and every SQL text the code holds (see test/helpers/cockroach-sql.ts for exactly what
 * is collected) against the rules there. A finding fails the test unless it is one of the listed
 * exceptions below, each with its reason; an exception that no longer matches anything fails too,
 * so the list stays exact. What this cannot see (SQL compiled by kysely's query builder, behaviour
 * at run time) is said in docs/scaling.md, CockroachDB.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SQL_DIR } from '../../../src/core/db/migrate.ts';
import {
  BUILDER_RULES,
  builderCalls,
  check,
  cockroachMigrations,
  codeSql,
  type Finding,
  NOTES,
  RULES,
  type SqlText,
  sqlInSource,
} from '../../helpers/cockroach-sql.ts';

interface Exception {
  file: string;
  /** A piece of the SQL text (not a line number, which moves). */
  contains: string;
  rules: string[];
  why: string;
}

/** Statements behind an engine switch: only PostgreSQL runs them (CockroachDB takes the other branch). */
const POSTGRES_BRANCH: Exception[] = [
  {
    file: 'src/core/db/locks.ts',
    contains: 'pg_advisory_xact_lock(hashtextextended(k, 0))',
    rules: ['advisory-lock', 'hashtext'],
    why: 'lockNames: advisory locks on PostgreSQL, rows of gatehouse_locks on CockroachDB',
  },
  {
    file: 'src/core/db/locks.ts',
    contains: 'pg_try_advisory_xact_lock(hashtextextended(',
    rules: ['advisory-lock', 'hashtext'],
    why: 'tryLockName: the same switch',
  },
  {
    file: 'src/core/db/migrate.ts',
    contains: 'pg_advisory_lock($1)',
    rules: ['advisory-lock'],
    why: 'the migration lock: a row of gatehouse_migrate_lock on CockroachDB',
  },
  {
    file: 'src/core/db/migrate.ts',
    contains: 'pg_advisory_unlock($1)',
    rules: ['advisory-lock'],
    why: 'the same lock released',
  },
  {
    file: 'src/dsync/store/outbox.ts',
    contains: 'pg_try_advisory_xact_lock($1::int, hashtext($2))',
    rules: ['advisory-lock', 'hashtext'],
    why: 'the batch lock of a directory: tryLockName on CockroachDB',
  },
  {
    file: 'src/core/audit/store.ts',
    contains: "set_config('gatehouse.audit_purge'",
    rules: ['custom-setting'],
    why: 'opens the append-only trigger for the purge; CockroachDB has no such trigger (sql/cockroach/0190)',
  },
  {
    file: 'src/dsync/store/steps.ts',
    contains: 'WHERE r.ctid = $3::tid',
    rules: ['system-columns'],
    why: 'the version check of a row: planned only with PostgreSQL (ChangePlan versions); CockroachDB plans read the rows whole',
  },
  {
    file: 'src/dsync/store/steps.ts',
    contains: 'WHERE u.ctid = a.tid',
    rules: ['system-columns'],
    why: 'the version check of several users: the same switch',
  },
  {
    file: 'src/oauth2/store/logout.ts',
    contains: 'collate "C"',
    rules: ['collate'],
    why: 'the join in the collation of oauth2_clients.id on PostgreSQL; a plain join on CockroachDB',
  },
  {
    file: 'src/oauth2/store/sessions.ts',
    contains: 'collate "C"',
    rules: ['collate'],
    why: 'the same join, in the statement that deletes a batch of login sessions',
  },
];

/** Files whose every statement runs on the job queue's PostgreSQL (`queue.dsn`), never on CockroachDB. */
const QUEUE_FILES: Record<string, string> = {
  'src/core/jobs/liveness.ts': "worker liveness: session advisory locks on the worker's own queue connection",
  'src/core/jobs/relay.ts':
    'the job relay: its election lock, marks and graphile-worker calls are on the queue connection; on the data side it only reads and deletes outbox rows by id',
};

const isQueueStatement = (t: SqlText) => /\bgraphile_worker\./.test(t.sql);
const fileOf = (origin: string) => origin.replace(/:\d+$/, '');

function unexplained(findings: Finding[], texts: SqlText[]): { left: Finding[]; unused: Exception[] } {
  const used = new Set<Exception>();
  const left = findings.filter((f) => {
    if (QUEUE_FILES[fileOf(f.origin)]) return false;
    const here = texts.filter((t) => t.origin === f.origin);
    const e = POSTGRES_BRANCH.find(
      (x) => x.file === fileOf(f.origin) && x.rules.includes(f.rule) && here.some((t) => t.sql.includes(x.contains)),
    );
    if (e) used.add(e);
    return !e;
  });
  return { left, unused: POSTGRES_BRANCH.filter((e) => !used.has(e)) };
}

const format = (fs: Finding[]) =>
  fs.map((f) => `${f.origin}: [${f.rule}] ${f.excerpt}\n    ${f.reason} (${f.source})`).join('\n');

describe('CockroachDB: static check of migrations and query text', () => {
  const migrations = cockroachMigrations();
  const code = codeSql();
  const dataCode = code.filter((t) => !isQueueStatement(t));

  it('collects every migration (with the CockroachDB variants in place) and the SQL text of the code', () => {
    const files = readdirSync(SQL_DIR).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f));
    expect(migrations).toHaveLength(files.length);
    const variants = readdirSync(join(SQL_DIR, 'cockroach')).sort();
    expect(migrations.filter((m) => m.origin.startsWith('sql/cockroach/')).map((m) => m.origin)).toEqual(
      variants.map((v) => `sql/cockroach/${v}`),
    );
    // Sanity of the collector: the known shapes are found.
    expect(code.some((t) => t.origin.startsWith('src/dsync/store/filter-sql.ts') && /#>>/.test(t.sql))).toBe(true);
    expect(
      code.some(
        (t) => t.origin.startsWith('src/core/db/migrate.ts') && /INSERT INTO gatehouse_schema_migrations/.test(t.sql),
      ),
    ).toBe(true);
    expect(code.length).toBeGreaterThan(100);
    console.info(
      `CockroachDB static check: ${migrations.length} migrations (${variants.length} CockroachDB variants), ${code.length} SQL texts in the code (${code.length - dataCode.length} graphile-worker statements of the queue, not checked), ${RULES.length} rules + ${NOTES.length} notes, ${builderCalls().length} kysely locking-clause calls checked by name. Not checked: SQL compiled by kysely's query builder, behaviour at run time.`,
    );
  });

  it('no migration uses a construct CockroachDB lacks', () => {
    const findings = check(migrations);
    expect(findings, format(findings)).toEqual([]);
  });

  it('no data-side SQL text uses a construct CockroachDB lacks, except behind an engine switch', () => {
    const { left, unused } = unexplained(check(dataCode), code);
    expect(left, format(left)).toEqual([]);
    expect(
      unused.map((e) => `${e.file}: ${e.contains}`),
      'listed exceptions that no longer match',
    ).toEqual([]);
  });

  it('every engine-switched file asks engineOf', () => {
    for (const f of new Set(POSTGRES_BRANCH.map((e) => e.file))) {
      expect(readFileSync(join(import.meta.dirname, '../../..', f), 'utf8'), f).toMatch(/\bengineOf\(/);
    }
  });

  it('kysely locking clauses: only those CockroachDB gives the PostgreSQL meaning', () => {
    const bad = builderCalls().filter((c) => !BUILDER_RULES.find((r) => r.method === c.method)?.ok);
    expect(bad).toEqual([]);
  });

  it('the queue statements in data code are listed (they need the queue on PostgreSQL, queue.dsn)', () => {
    // Statements that call graphile-worker from code that otherwise runs on the data database: with
    // dsn on CockroachDB they must reach the queue's PostgreSQL, not the data transaction.
    const files = [...new Set(code.filter(isQueueStatement).map((t) => fileOf(t.origin)))].sort();
    console.info(`CockroachDB static check: graphile-worker statements (queue side) in ${files.join(', ')}`);
    // Data transactions never call graphile-worker: with queue.dsn their jobs go to the outbox
    // (src/core/jobs/queue.ts) and directory-sync's senders are tracked by sender id.
    expect(files).toEqual(['src/core/jobs/admin.ts', 'src/core/jobs/liveness.ts']);
  });

  it('notes: accepted by CockroachDB but different (printed, not failures)', () => {
    const notes = check(migrations, NOTES);
    console.info(
      `CockroachDB static check, notes:\n${[
        ...new Set(
          notes.map(
            (n) =>
              `[${n.rule}] ${n.reason}: ${notes
                .filter((x) => x.rule === n.rule)
                .map((x) => x.origin.replace('sql/', ''))
                .join(', ')}`,
          ),
        ),
      ].join('\n')}`,
    );
    expect(notes.map((n) => n.rule)).toContain('concurrently');
  });
});

describe('CockroachDB static check: a planted violation fails', () => {
  it('a new migration with an unsupported construct is found, by rule', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crdb-check-'));
    try {
      for (const f of readdirSync(SQL_DIR))
        if (f.endsWith('.sql')) writeFileSync(join(dir, f), readFileSync(join(SQL_DIR, f)));
      mkdirSync(join(dir, 'cockroach'));
      for (const f of readdirSync(join(SQL_DIR, 'cockroach')))
        writeFileSync(join(dir, 'cockroach', f), readFileSync(join(SQL_DIR, 'cockroach', f)));
      writeFileSync(
        join(dir, '0999_planted.sql'),
        [
          'CREATE TABLE planted (id bigserial PRIMARY KEY, v text);',
          "CREATE FUNCTION planted_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('c', 'x'); RETURN NULL; END $$;",
          'CREATE TRIGGER planted_t AFTER INSERT ON planted FOR EACH STATEMENT EXECUTE FUNCTION planted_notify();',
          'ALTER TABLE networks ADD COLUMN planted text;',
          "UPDATE networks SET planted = 'x';",
          '',
        ].join('\n'),
      );
      const findings = check(cockroachMigrations(dir));
      expect(
        findings
          .filter((f) => f.origin.endsWith('0999_planted.sql'))
          .map((f) => f.rule)
          .sort(),
      ).toEqual(['ddl-then-dml-in-one-transaction', 'listen-notify', 'serial', 'trigger']);
      // A CockroachDB variant replaces the file and clears it.
      writeFileSync(
        join(dir, 'cockroach', '0999_planted.sql'),
        'CREATE TABLE planted (id uuid PRIMARY KEY, v text);\n',
      );
      expect(check(cockroachMigrations(dir))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a new query with an advisory lock, LISTEN or a trigger-less notify is found; words in messages are not', () => {
    const src = [
      "import { sql } from 'kysely';",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of a planted source file
      'export const a = (db) => sql`select pg_advisory_xact_lock(${1})`.execute(db);',
      "export const b = (c) => c.query('LISTEN gatehouse_changes');",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of a planted source file
      'export const c = (db, x) => sql<{ n: number }>`select pg_notify(${x}, ${`nested ${1}`})`.execute(db);',
      "export const msg = `run gatehouse migrate sql` + 'sql`not a tag`';",
      '// sql`select pg_advisory_lock(1)` in a comment',
    ].join('\n');
    const texts = sqlInSource('src/planted.ts', src);
    expect(texts.map((t) => t.sql)).toEqual([
      'select pg_advisory_xact_lock($1)',
      'LISTEN gatehouse_changes',
      'select pg_notify($1, $2)',
    ]);
    expect(check(texts).map((f) => `${f.origin} ${f.rule}`)).toEqual([
      'src/planted.ts:2 advisory-lock',
      'src/planted.ts:3 listen-notify',
      'src/planted.ts:4 listen-notify',
    ]);
    expect(unexplained(check(texts), texts).left).toHaveLength(3);
  });
});
