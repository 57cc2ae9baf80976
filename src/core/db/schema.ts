/**
 * Typed tables for kysely: one interface per table created in sql/. Changes in the same commit as
 * the migration; test/http/core/schema.test.ts compares this file with information_schema.
 */
import type { ColumnType, Generated } from 'kysely';

export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
export type Json<T = unknown> = ColumnType<T, string, string>;

export interface NetworksTable {
  id: string;
  created_at: Generated<Date>;
}

export interface Database {
  networks: NetworksTable;
}

/** Column lists per table, compared with information_schema in a test so this file cannot drift. */
export const TABLE_COLUMNS: Record<keyof Database, string[]> = {
  networks: ['id', 'created_at'],
};
