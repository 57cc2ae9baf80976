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

export interface DsyncDirectoriesTable {
  id: string;
  name: string;
  tenant: string;
  product: string;
  type: string;
  log_webhook_events: Generated<boolean>;
  deactivated: Generated<boolean>;
  webhook_endpoint: Generated<string>;
  webhook_secret: Generated<string>;
  scim_path: Generated<string>;
  scim_secret: Generated<string>;
  google_access_token: Generated<string>;
  google_refresh_token: Generated<string>;
  event_seq: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface DsyncUsersTable {
  directory_id: string;
  id: string;
  user_name: string | null;
  external_id: string | null;
  email: string | null;
  first_name: Generated<string>;
  last_name: Generated<string>;
  active: Generated<boolean>;
  roles: Json<unknown> | null;
  raw: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface DsyncGroupsTable {
  directory_id: string;
  id: string;
  name: string;
  external_id: string | null;
  raw: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface DsyncGroupMembersTable {
  directory_id: string;
  group_id: string;
  user_id: string;
  created_at: Generated<Date>;
}

export interface DsyncEventsTable {
  id: string;
  directory_id: string;
  seq: number;
  event: string;
  payload: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
}

export interface Database {
  networks: NetworksTable;
  dsync_directories: DsyncDirectoriesTable;
  dsync_users: DsyncUsersTable;
  dsync_groups: DsyncGroupsTable;
  dsync_group_members: DsyncGroupMembersTable;
  dsync_events: DsyncEventsTable;
}

/** Column lists per table, compared with information_schema in a test so this file cannot drift. */
export const TABLE_COLUMNS: Record<keyof Database, string[]> = {
  networks: ['id', 'created_at'],
  dsync_directories: [
    'id',
    'name',
    'tenant',
    'product',
    'type',
    'log_webhook_events',
    'deactivated',
    'webhook_endpoint',
    'webhook_secret',
    'scim_path',
    'scim_secret',
    'google_access_token',
    'google_refresh_token',
    'event_seq',
    'created_at',
    'updated_at',
  ],
  dsync_users: [
    'directory_id',
    'id',
    'user_name',
    'external_id',
    'email',
    'first_name',
    'last_name',
    'active',
    'roles',
    'raw',
    'created_at',
    'updated_at',
  ],
  dsync_groups: ['directory_id', 'id', 'name', 'external_id', 'raw', 'created_at', 'updated_at'],
  dsync_group_members: ['directory_id', 'group_id', 'user_id', 'created_at'],
  dsync_events: ['id', 'directory_id', 'seq', 'event', 'payload', 'created_at'],
};
