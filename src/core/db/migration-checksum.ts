/**
 * The checksum of a migration file: SHA-256 of its SQL with the comments and the layout left out, so
 * that rewording a comment or re-indenting a shipped file does not change it, while any change to a
 * statement does. The `-- gatehouse:…` marker lines are kept (they change how the file runs).
 *
 * Earlier releases recorded the SHA-256 of the whole file. A ledger row with such a checksum is
 * still accepted when it is the SHA-256 of the file as it is now, or when it is listed in `REWORDED`
 * for the statements the file still has (its comments were rewritten after it shipped); `migrate
 * sql` then records this checksum in its place.
 */
import { createHash } from 'node:crypto';

const PREFIX = 'sql:';

/**
 * The statements of `sql` without comments, with each run of whitespace outside literals reduced to
 * one space, and dropped next to punctuation (`a , b` and `a,b` are the same). String literals,
 * quoted identifiers and dollar-quoted bodies are kept exactly as written.
 */
export function normalizeSql(sql: string): string {
  let out = '';
  let space = false;
  const word = (c: string | undefined) => c !== undefined && /[\w$]/.test(c);
  const emit = (s: string) => {
    if (space && word(out[out.length - 1]) && word(s[0])) out += ' ';
    out += s;
    space = false;
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] as string;
    const rest = sql.slice(i, i + 2);
    if (rest === '--') {
      const end = sql.indexOf('\n', i);
      const line = sql.slice(i, end < 0 ? sql.length : end);
      // Markers are part of what the file does: `-- gatehouse:no-transaction` and the others.
      if (/^--[ \t]*gatehouse:/.test(line)) {
        out += `${out ? '\n' : ''}${line.replace(/\s+/g, ' ').trim()}\n`;
        space = false;
      } else {
        space = true;
      }
      i = end < 0 ? sql.length : end;
    } else if (rest === '/*') {
      // Block comments nest in PostgreSQL.
      let depth = 0;
      while (i < sql.length) {
        if (sql.startsWith('/*', i)) {
          depth++;
          i += 2;
        } else if (sql.startsWith('*/', i)) {
          depth--;
          i += 2;
          if (depth === 0) break;
        } else i++;
      }
      space = true;
    } else if (/\s/.test(c)) {
      space = true;
      i++;
    } else if (c === "'" || c === '"') {
      // A quote inside is doubled; E'…' strings may also escape it with a backslash.
      const escapes = c === "'" && !space && /[eE]$/.test(out) && !word(out[out.length - 2]);
      let j = i + 1;
      while (j < sql.length) {
        if (escapes && sql[j] === '\\') j += 2;
        else if (sql[j] === c && sql[j + 1] === c) j += 2;
        else if (sql[j] === c) break;
        else j++;
      }
      emit(sql.slice(i, j + 1));
      i = j + 1;
    } else if (c === '$' && (space || !word(out[out.length - 1])) && /^\$[A-Za-z_]?\w*\$/.test(sql.slice(i))) {
      const tag = (/^\$[A-Za-z_]?\w*\$/.exec(sql.slice(i)) as RegExpExecArray)[0];
      const end = sql.indexOf(tag, i + tag.length);
      const stop = end < 0 ? sql.length : end + tag.length;
      emit(sql.slice(i, stop));
      i = stop;
    } else {
      let j = i + 1;
      if (word(c)) while (j < sql.length && word(sql[j])) j++;
      emit(sql.slice(i, j));
      i = j;
    }
  }
  return out.trim();
}

/** The checksum recorded for a migration file (see the top of this file). */
export const migrationChecksum = (sql: string): string =>
  PREFIX + createHash('sha256').update(normalizeSql(sql)).digest('hex');

/** The checksum earlier releases recorded: SHA-256 of the whole file. */
export const wholeFileChecksum = (sql: string): string => createHash('sha256').update(sql).digest('hex');

/**
 * Whole-file checksums recorded by earlier releases for files whose comments were rewritten since,
 * each with the checksum of the statements that file had. The row is accepted while the file still
 * has those statements; a change to a statement is reported as `changed` as before.
 */
const REWORDED: ReadonlyMap<string, string> = new Map([
  // 0050_oauth2_refresh_used_times_nullable.sql
  [
    'ddc4e7c88c769601a4b2e0e1c6843a9c21da0da8a6a2319f376f3ca613d8e541',
    'sql:f2a69fe1932035dfaa847e2658f9d641ec4b757427a2f73c91908f7ed360ef3f',
  ],
  // 0052_oauth2_access_tokens_subject_client_idx.sql
  [
    'ba6d01f3fa6b82fd45bf4eb1e566ef0b294ceeb62d7637af715823719b6eb7f7',
    'sql:c98197af067b04ff0fbbef8de7aa1cbf47f49de8ac4115c583576d66fb30baf0',
  ],
  // 0053_oauth2_refresh_tokens_subject_client_idx.sql
  [
    '94abda50ff4f50eb78eeab756fc4fe64c0ef371808a1d0c08b993f3c7c565fb6',
    'sql:0b82343ae3bdcefd476e16d540d7fcbae5921d0b0a8cd212bddc661f816f7025',
  ],
  // 0060_oauth2_flows_logout_clients_idx.sql
  [
    '3ed0965de16f1cdd23dde018802faa29d678ae1f1b4fcfca38b5b551d3bae4bc',
    'sql:283eca5ac3ebb3780d1f38e3ce4081c0bae4c5c7ebc349c2d92ddcef95054a65',
  ],
  // 0100_dsync.sql
  [
    '61ddc5b9ee2bd26be391501fce3f06b9b06a142942b3400bf1be312a706b9a3f',
    'sql:278847e043a0a4d9897ac758291e8efa85f7df2160555f4bd4e7f7c6248d1a2d',
  ],
  // 0150_dsync_webhooks.sql
  [
    '83580f5ef37ab834b80bf17ffebacdd2f7d6e19ae8dcd90cb3142ea1dee30d07',
    'sql:f8e05034fa3a276152ca991b46e79063042b8194dfdd0ba6da09eb3692079823',
  ],
  // 0170_dsync_google.sql
  [
    '277ab86fd7069cd69204abe4e96c7b0a2a639352ddfdf3b170ec1efb487c17d7',
    'sql:36e25f6e40670678cd0f3361e631cffac1ea9126a5387a0df1a55c6798891481',
  ],
]);

/** Whether a ledger row's checksum accepts the file's current content (see the top of this file). */
export function checksumMatches(recorded: string, sql: string): boolean {
  const current = migrationChecksum(sql);
  if (recorded === current) return true;
  if (recorded.startsWith(PREFIX)) return false;
  return recorded === wholeFileChecksum(sql) || REWORDED.get(recorded) === current;
}
