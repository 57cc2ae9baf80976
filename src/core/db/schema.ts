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

/** JSON Web Keys (sql/0020). `keydata` is the sealed JWK (src/core/crypto/aead.ts), never plaintext. */
export interface JwkKeysTable {
  id: Generated<number>;
  nid: string;
  sid: string;
  kid: string;
  keydata: string;
  created_at: Timestamp;
}

/** Row locks that serialise automatic key-set generation across processes (sql/0020). */
export interface JwkSetLocksTable {
  nid: string;
  sid: string;
}

export interface Database {
  networks: NetworksTable;
  jwk_keys: JwkKeysTable;
  jwk_set_locks: JwkSetLocksTable;
}

/** Column lists per table, compared with information_schema in a test so this file cannot drift. */
export const TABLE_COLUMNS: Record<keyof Database, string[]> = {
  networks: ['id', 'created_at'],
  jwk_keys: ['id', 'nid', 'sid', 'kid', 'keydata', 'created_at'],
  jwk_set_locks: ['nid', 'sid'],
};
