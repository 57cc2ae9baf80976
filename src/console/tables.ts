/**
 * The console's table, typed for kysely (sql/0250); joined with the others in `src/database.ts`.
 */
import type { Kysely } from 'kysely';
import type { CoreDatabase } from '../core/db/schema.ts';

/** Operator console sessions (sql/0250, src/console/sessions.ts): only the digest of the session id. */
export interface ConsoleSessionsTable {
  id_hash: string;
  subject: string;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

export interface ConsoleTables {
  console_sessions: ConsoleSessionsTable;
}

/** What the console's code sees of the database: the core's tables and its own. */
type Database = CoreDatabase & ConsoleTables;
/** The database handle the console holds. */
export type Db = Kysely<Database>;

/** Column lists per table, compared with information_schema by test/http/core/schema.test.ts. */
export const CONSOLE_TABLE_COLUMNS: Record<keyof ConsoleTables, string[]> = {
  console_sessions: ['id_hash', 'subject', 'created_at', 'last_seen_at', 'expires_at'],
};
