/**
 * Static CockroachDB check of the SQL gatehouse sends to the data database: what can be decided
 * from the text alone, without a CockroachDB server. Two sources are collected:
 * - migrations: the forward part of every file as the migrator runs it on CockroachDB (a
 *   `sql/cockroach/NNNN_name.sql` variant in place of its PostgreSQL file);
 * - code: every `sql` template of kysely (`sql\`…\``, `sql<T>\`…\``), every `sql.raw(…)` string,
 *   every string literal passed as the first argument of a `.query(…)` call, and every other string
 *   or template that begins with a statement keyword in capitals (SQL kept in a constant), in `src/`
 *   and `tasks/`, with each `${…}` replaced by a `$n` parameter.
 * Not collected: SQL that kysely's query builder compiles (selectFrom/insertInto/updateTable/
 * deleteFrom chains); only its locking clauses are checked, by method name (`BUILDER_RULES`).
 * Rules are written against CockroachDB v24.1 (the oldest release line the docs describe as
 * supported here); each names its reason and a public source.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { listMigrationFiles, SQL_DIR } from '../../src/core/db/migrate.ts';

export const ROOT = resolve(import.meta.dirname, '../..');

export interface SqlText {
  /** `sql/0010_x.sql`, `sql/cockroach/0010_x.sql`, or `src/a/b.ts:LINE`. */
  origin: string;
  kind: 'migration' | 'code';
  sql: string;
  /** For migrations: runs inside one transaction. */
  transactional?: boolean;
}

export interface Rule {
  id: string;
  /** Which texts it applies to. */
  applies: ReadonlyArray<SqlText['kind']>;
  test: (sql: string, t: SqlText) => boolean;
  reason: string;
  source: string;
}

const COMPAT = 'https://www.cockroachlabs.com/docs/v24.1/postgresql-compatibility';

/** What fails (or silently does something else) on CockroachDB. */
export const RULES: readonly Rule[] = [
  {
    id: 'listen-notify',
    applies: ['migration', 'code'],
    test: (s) => /\b(?:LISTEN|UNLISTEN|NOTIFY)\s+[a-z_"]/i.test(s) || /\bpg_notify\s*\(/i.test(s),
    reason: 'CockroachDB has no LISTEN/NOTIFY (changefeeds are its change stream)',
    source: 'https://github.com/cockroachdb/cockroach/issues/41522',
  },
  {
    id: 'advisory-lock',
    applies: ['migration', 'code'],
    test: (s) => /\bpg_(?:try_)?advisory_(?:xact_)?(?:lock|unlock)(?:_shared|_all)?\s*\(/i.test(s),
    reason:
      'CockroachDB does not support advisory lock functions (some exist as no-ops, so they do not exclude anything); use row locks (src/core/db/locks.ts)',
    source: `${COMPAT}#unsupported-features`,
  },
  {
    id: 'hashtext',
    applies: ['migration', 'code'],
    test: (s) => /\bhashtext(?:extended)?\s*\(/i.test(s),
    reason: "hashtext/hashtextextended are PostgreSQL's internal hash functions; CockroachDB does not define them",
    source: 'https://www.cockroachlabs.com/docs/v24.1/functions-and-operators',
  },
  {
    id: 'trigger',
    applies: ['migration', 'code'],
    test: (s) =>
      /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\b/i.test(s) || /\bRETURNS\s+trigger\b/i.test(s),
    reason:
      'CockroachDB v24.1 and v24.2 have no triggers; v24.3+ has row-level triggers only (no FOR EACH STATEMENT, no TRUNCATE triggers)',
    source: `${COMPAT}#unsupported-features`,
  },
  {
    id: 'serial',
    applies: ['migration'],
    test: (s) => /\b(?:small|big)?serial\d?\b/i.test(s),
    reason:
      'CockroachDB turns SERIAL into unique_rowid() by default: values above 2^53, which the driver returns as JavaScript numbers (int8 -> Number) and would round; use a sequence (DEFAULT nextval(...)) or a uuid',
    source: 'https://www.cockroachlabs.com/docs/v24.1/serial',
  },
  {
    id: 'collate',
    applies: ['migration', 'code'],
    test: (s) => /\bCOLLATE\s+"?[A-Za-z]/i.test(s),
    reason:
      'a COLLATE column is a distinct collated-string type on CockroachDB (ICU locales, its own comparison and index rules); its default STRING order is already byte-wise, which is what COLLATE "C" gives PostgreSQL',
    source: 'https://www.cockroachlabs.com/docs/v24.1/collate',
  },
  {
    id: 'extension',
    applies: ['migration', 'code'],
    test: (s) => /\bCREATE\s+EXTENSION\b/i.test(s),
    reason:
      'CockroachDB has no extensions (citext, pgcrypto, uuid-ossp…): their types and functions are built in or absent',
    source: `${COMPAT}#unsupported-features`,
  },
  {
    id: 'exclusion-constraint',
    applies: ['migration'],
    test: (s) => /\bEXCLUDE\s+USING\b/i.test(s),
    reason: 'CockroachDB has no exclusion constraints',
    source: 'https://github.com/cockroachdb/cockroach/issues/46657',
  },
  {
    id: 'deferrable',
    applies: ['migration', 'code'],
    test: (s) => /\b(?:NOT\s+)?DEFERRABLE\b|\bINITIALLY\s+DEFERRED\b|\bSET\s+CONSTRAINTS\b/i.test(s),
    reason: 'CockroachDB checks every constraint immediately (no deferred constraints)',
    source: 'https://github.com/cockroachdb/cockroach/issues/31632',
  },
  {
    id: 'index-method',
    applies: ['migration'],
    test: (s) => /\bUSING\s+(?:gist|brin|spgist|hash)\b/i.test(s),
    reason:
      'CockroachDB indexes are B-tree-like or inverted (USING GIN); GiST, BRIN, SP-GiST and PostgreSQL hash indexes do not exist (USING HASH means a hash-sharded index there)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/create-index',
  },
  {
    id: 'on-conflict-expression',
    applies: ['migration', 'code'],
    test: (s) => /\bON\s+CONFLICT\s*\(\s*\(/i.test(s),
    reason: 'expressions as ON CONFLICT targets are not supported (only column lists and constraint names)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/known-limitations',
  },
  {
    id: 'system-columns',
    applies: ['migration', 'code'],
    test: (s) => /\b(?:ctid|xmin|xmax|cmin|cmax)\b|\btxid_current\b|\bpg_current_xact_id\b/i.test(s),
    reason: 'CockroachDB rows have no PostgreSQL system columns and transactions no txid',
    source: `${COMPAT}`,
  },
  {
    id: 'maintenance-and-table-locks',
    applies: ['migration', 'code'],
    test: (s) => /^\s*(?:LOCK\s+TABLE|VACUUM|CLUSTER|REINDEX)\b/im.test(s),
    reason:
      'LOCK TABLE, VACUUM, CLUSTER and REINDEX do not exist on CockroachDB (MVCC garbage collection is automatic)',
    source: `${COMPAT}`,
  },
  {
    id: 'inheritance-and-rules',
    applies: ['migration'],
    test: (s) => /\bINHERITS\s*\(|\bCREATE\s+(?:OR\s+REPLACE\s+)?RULE\b|\bTABLESPACE\b/i.test(s),
    reason: 'no table inheritance, rewrite rules or tablespaces on CockroachDB',
    source: `${COMPAT}#unsupported-features`,
  },
  {
    id: 'custom-setting',
    applies: ['migration', 'code'],
    test: (s) => /\b(?:set_config|current_setting)\s*\(\s*'[a-z_]+\.[a-z_]+'/i.test(s),
    reason:
      'custom (dotted) session settings are not portable to CockroachDB; keep them in the PostgreSQL branch of an engine switch',
    source: 'https://www.cockroachlabs.com/docs/v24.1/set-vars',
  },
  {
    id: 'ddl-then-dml-in-one-transaction',
    applies: ['migration'],
    test: (s, t) => {
      if (!t.transactional) return false;
      const altered = [...s.matchAll(/\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?("?[\w.]+"?)/gi)].map((m) =>
        (m[1] as string).replaceAll('"', '').toLowerCase(),
      );
      return altered.some((table) =>
        new RegExp(`\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\s+${table}\\b`, 'i').test(s),
      );
    },
    reason:
      'a schema change of an existing table and a write to that table in one transaction: CockroachDB runs schema changes of an explicit transaction as online jobs at commit, so the write does not see it (or the transaction fails); split them into two migrations',
    source: 'https://www.cockroachlabs.com/docs/v24.1/online-schema-changes#schema-changes-within-transactions',
  },
  {
    id: 'unconfirmed-function',
    applies: ['migration', 'code'],
    test: (s) => /\b(?:starts_with|to_regclass|to_regtype|to_regproc)\s*\(/i.test(s),
    reason:
      'a PostgreSQL function not confirmed in CockroachDB v24.1; use the portable form (left(x, length(p)) = p; information_schema.tables)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/functions-and-operators',
  },
];

/** Accepted by CockroachDB although it differs from PostgreSQL: checked, not a failure; said in the output. */
export const NOTES: readonly Rule[] = [
  {
    id: 'concurrently',
    applies: ['migration'],
    test: (s) => /\b(?:CREATE|DROP)\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\b/i.test(s),
    reason: 'CONCURRENTLY is accepted as a no-op: CockroachDB builds and drops every index online',
    source: 'https://www.cockroachlabs.com/docs/v24.1/create-index',
  },
  {
    id: 'include',
    applies: ['migration'],
    test: (s) => /\)\s*INCLUDE\s*\(/i.test(s),
    reason: 'INCLUDE is accepted as an alias of STORING',
    source: 'https://www.cockroachlabs.com/docs/v24.1/create-index',
  },
  {
    id: 'json-type',
    applies: ['migration'],
    test: (s) => /\s(?:json)\b(?!b)/i.test(s),
    reason:
      'json is an alias of JSONB on CockroachDB: key order and duplicate keys of stored documents are not kept (PostgreSQL json keeps the text)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/jsonb',
  },
  {
    id: 'integer-size',
    applies: ['migration'],
    test: (s) => /\binteger\b|\bint\b/i.test(s),
    reason: 'INT/INTEGER is 64-bit on CockroachDB (default_int_size = 8); the driver returns int8 as a number as well',
    source: 'https://www.cockroachlabs.com/docs/v24.1/int',
  },
];

/** Kysely builder methods whose SQL is not collected as text: checked by name. */
export const BUILDER_RULES: ReadonlyArray<{ method: string; ok: boolean; reason: string; source: string }> = [
  {
    method: 'forUpdate',
    ok: true,
    reason: 'FOR UPDATE is supported',
    source: 'https://www.cockroachlabs.com/docs/v24.1/select-for-update',
  },
  {
    method: 'skipLocked',
    ok: true,
    reason: 'SKIP LOCKED is supported since v22.2',
    source: 'https://www.cockroachlabs.com/docs/v24.1/select-for-update',
  },
  {
    method: 'noWait',
    ok: true,
    reason: 'NOWAIT is supported',
    source: 'https://www.cockroachlabs.com/docs/v24.1/select-for-update',
  },
  {
    method: 'forShare',
    ok: true,
    reason: 'FOR SHARE takes a shared lock since v23.2 (before: parsed, weaker)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/select-for-update',
  },
  {
    method: 'forKeyShare',
    ok: false,
    reason: 'FOR KEY SHARE is parsed but locks as FOR SHARE (not the PostgreSQL semantics)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/select-for-update',
  },
  {
    method: 'forNoKeyUpdate',
    ok: false,
    reason: 'FOR NO KEY UPDATE is parsed but locks as FOR UPDATE (not the PostgreSQL semantics)',
    source: 'https://www.cockroachlabs.com/docs/v24.1/select-for-update',
  },
];

const withoutSqlComments = (s: string) =>
  s
    .split('\n')
    .map((l) => l.replace(/--.*$/, ''))
    .join('\n');

/** Migrations as the migrator runs them on CockroachDB (forward parts). */
export function cockroachMigrations(dir = SQL_DIR): SqlText[] {
  return listMigrationFiles(dir, 'cockroach').map((f) => ({
    origin: relative(ROOT, join(dir, f.variant ?? f.file)),
    kind: 'migration' as const,
    sql: f.up,
    transactional: f.transactional,
  }));
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const lineOf = (src: string, i: number) => src.slice(0, i).split('\n').length;

/** Where SQL starts: a `sql` tag, `sql.raw(` or `.query(` before a literal (matched at code level only). */
const SQL_START =
  /(?<![\w$.])sql(?:<[^`]*?>)?(?=`)|(?<![\w$.])sql\.raw\(\s*(?=[`'"])|\.query(?:<[^();]*?>)?\(\s*(?=[`'"])/y;

/** Any other string or template that begins like a statement, in capitals (SQL kept in a constant). */
const STATEMENT =
  /^\s*(?:SELECT\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|SEQUENCE|FUNCTION|TRIGGER)\s|ALTER\s+TABLE\s|WITH\s+\w+\s+AS\s*\(|LISTEN\s|NOTIFY\s)/;

/**
 * SQL text in one TypeScript source (see the file comment for what is collected). A small lexer
 * walks the code (skipping comments, strings, regular expressions and templates, and looking into
 * `${…}` of templates), so that a word like "sql" inside a message is not taken for a tag.
 */
export function sqlInSource(file: string, src: string): SqlText[] {
  const out: SqlText[] = [];
  const fail = (i: number, what: string): never => {
    throw new Error(`${file}:${lineOf(src, i)}: ${what}`);
  };
  const quoted = (i: number): { text: string; end: number } => {
    const q = src[i];
    let j = i + 1;
    while (j < src.length && src[j] !== q) j += src[j] === '\\' ? 2 : 1;
    if (j >= src.length) fail(i, 'unterminated string');
    return { text: src.slice(i + 1, j), end: j + 1 };
  };
  const template = (i: number, record: boolean | 'if-statement'): number => {
    let text = '';
    let n = 0;
    let j = i + 1;
    while (j < src.length) {
      const c = src[j] as string;
      if (c === '\\') {
        text += src.slice(j, j + 2);
        j += 2;
      } else if (c === '`') {
        if (record === true || (record && STATEMENT.test(text)))
          out.push({ origin: `${file}:${lineOf(src, i)}`, kind: 'code', sql: text });
        return j + 1;
      } else if (c === '$' && src[j + 1] === '{') {
        j = code(j + 2, true);
        text += `$${++n}`;
      } else {
        text += c;
        j++;
      }
    }
    return fail(i, 'unterminated template');
  };
  const regexStart = (i: number): boolean => {
    let k = i - 1;
    while (k >= 0 && /\s/.test(src[k] as string)) k--;
    return k < 0 || '(,=:[!&|?{};+-*%<>~^'.includes(src[k] as string) || /\breturn$/.test(src.slice(0, k + 1));
  };
  const regex = (i: number): number => {
    let j = i + 1;
    let cls = false;
    while (j < src.length) {
      const c = src[j];
      if (c === '\\') j += 2;
      else {
        if (c === '[') cls = true;
        else if (c === ']') cls = false;
        else if (c === '/' && !cls) return j + 1;
        else if (c === '\n') return fail(i, 'unterminated regular expression');
        j++;
      }
    }
    return fail(i, 'unterminated regular expression');
  };
  function code(i: number, untilBrace: boolean): number {
    let depth = 0;
    let j = i;
    while (j < src.length) {
      const c = src[j] as string;
      if (c === '/' && src[j + 1] === '/') {
        const nl = src.indexOf('\n', j);
        j = nl < 0 ? src.length : nl;
        continue;
      }
      if (c === '/' && src[j + 1] === '*') {
        j = src.indexOf('*/', j + 2) + 2;
        continue;
      }
      if (c === '/' && regexStart(j)) {
        j = regex(j);
        continue;
      }
      if (c === "'" || c === '"') {
        const lit = quoted(j);
        if (STATEMENT.test(lit.text)) out.push({ origin: `${file}:${lineOf(src, j)}`, kind: 'code', sql: lit.text });
        j = lit.end;
        continue;
      }
      if (c === '`') {
        j = template(j, 'if-statement');
        continue;
      }
      SQL_START.lastIndex = j;
      const m = SQL_START.exec(src);
      if (m) {
        const at = j + m[0].length;
        if (src[at] === '`') j = template(at, true);
        else {
          const lit = quoted(at);
          out.push({ origin: `${file}:${lineOf(src, at)}`, kind: 'code', sql: lit.text });
          j = lit.end;
        }
        continue;
      }
      if (c === '{') depth++;
      else if (c === '}') {
        if (untilBrace && depth === 0) return j + 1;
        depth--;
      }
      j++;
    }
    return untilBrace ? fail(i, 'unterminated interpolation') : j;
  }
  code(0, false);
  return out.sort((a, b) => a.origin.localeCompare(b.origin, 'en', { numeric: true }));
}

export function codeSql(dirs = ['src', 'tasks']): SqlText[] {
  return dirs.flatMap((d) =>
    tsFiles(join(ROOT, d)).flatMap((p) => sqlInSource(relative(ROOT, p), readFileSync(p, 'utf8'))),
  );
}

export function builderCalls(dirs = ['src', 'tasks']): Array<{ origin: string; method: string }> {
  const out: Array<{ origin: string; method: string }> = [];
  for (const d of dirs) {
    for (const p of tsFiles(join(ROOT, d))) {
      const src = readFileSync(p, 'utf8');
      for (const r of BUILDER_RULES) {
        for (const m of src.matchAll(new RegExp(`\\.${r.method}\\(`, 'g'))) {
          out.push({ origin: `${relative(ROOT, p)}:${lineOf(src, m.index ?? 0)}`, method: r.method });
        }
      }
    }
  }
  return out;
}

export interface Finding {
  origin: string;
  rule: string;
  reason: string;
  source: string;
  /** The first line of the text that matches, for the message. */
  excerpt: string;
}

export function check(texts: readonly SqlText[], rules: readonly Rule[] = RULES): Finding[] {
  const out: Finding[] = [];
  for (const t of texts) {
    const s = withoutSqlComments(t.sql);
    for (const r of rules) {
      if (!r.applies.includes(t.kind) || !r.test(s, t)) continue;
      const line = s.split('\n').find((l) => r.test(l, t)) ?? s.trim().split('\n')[0] ?? '';
      out.push({
        origin: t.origin,
        rule: r.id,
        reason: r.reason,
        source: r.source,
        excerpt: line.trim().slice(0, 120),
      });
    }
  }
  return out;
}
