/**
 * The whole program's tables: the core's, each domain's (from its face) and the console's, joined
 * here, where one file may know all of them. The composition root opens the one database handle
 * with this type and hands it to each domain, whose own view (`src/<domain>/tables.ts`: the
 * core's tables and its own) a handle of all the tables satisfies as is.
 */
import { CONSOLE_TABLE_COLUMNS, type ConsoleTables } from './console/tables.ts';
import { CORE_TABLE_COLUMNS, type CoreDatabase } from './core/db/schema.ts';
import { DSYNC_TABLE_COLUMNS, type DsyncTables } from './dsync/index.ts';
import { OAUTH2_TABLE_COLUMNS, type OAuth2Tables } from './oauth2/index.ts';

export interface Database extends CoreDatabase, OAuth2Tables, DsyncTables, ConsoleTables {}

/** Column lists per table, compared with information_schema by test/http/core/schema.test.ts. */
export const TABLE_COLUMNS: Record<keyof Database, string[]> = {
  ...CORE_TABLE_COLUMNS,
  ...OAUTH2_TABLE_COLUMNS,
  ...DSYNC_TABLE_COLUMNS,
  ...CONSOLE_TABLE_COLUMNS,
};
