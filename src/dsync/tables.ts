/**
 * Directory sync's tables, typed for kysely: one interface per table of sql/ that this domain owns.
 * Changes in the same commit as the migration; `src/database.ts` joins them with the core's and
 * OAuth 2.0's, and test/http/core/schema.test.ts compares the joined column lists with
 * information_schema.
 *
 * The domain's code sees the core's tables and these (`Database`, `Executor`, `Db` below), never
 * OAuth 2.0's.
 */
import type { ColumnType, Generated } from 'kysely';
import type { CoreDatabase, Json, Timestamp } from '../core/db/schema.ts';
import type { Db as CoreDb, Executor as CoreExecutor } from '../core/db/tx.ts';

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
  google_domain: Generated<string>;
  google_customer_id: Generated<string>;
  google_access_token_expires_at: Date | null;
  /** Google Workspace: the groups a sync is limited to (emails or ids); empty: all (sql/0310). */
  google_groups: Generated<string[]>;
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
  /** The enterprise extension's values, copies of `raw` (sql/0290). */
  employee_number: string | null;
  cost_center: string | null;
  organization: string | null;
  division: string | null;
  department: string | null;
  manager_id: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** The last SCIM request of a directory and the last it refused (sql/0300). */
export interface DsyncScimActivityTable {
  directory_id: string;
  last_request_at: Date;
  last_method: string;
  last_resource: string;
  last_status: number;
  last_error_at: Date | null;
  last_error_status: number | null;
  last_error: string | null;
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
  delivered_at: Date | null;
}

export interface DsyncSetupLinksTable {
  id: string;
  tenant: string;
  product: string;
  service: Generated<string>;
  name: Generated<string>;
  token_hash: string;
  token: string;
  webhook_url: string;
  webhook_secret: string;
  valid_till: Date;
  created_at: Generated<Date>;
}

export interface DsyncEventsPurgedTable {
  directory_id: string;
  seq: number;
}

export interface DsyncWebhookOutboxTable {
  event_id: string;
  directory_id: string;
  seq: number;
  mode: 'realtime' | 'batch';
  job_id: number | null;
  /** The event's webhook log row was written when it was queued (sql/0280). */
  logged: Generated<boolean>;
  created_at: Generated<Date>;
}

/** The real-time sender job of a directory (sql/0181_dsync_webhook_senders.sql). */
export interface DsyncWebhookSendersTable {
  directory_id: string;
  job_id: number | null;
  sender_id: string | null;
  failed_at: Date | null;
  created_at: Generated<Date>;
}

export interface DsyncWebhookBackoffTable {
  directory_id: string;
  attempts: number;
  next_attempt_at: Timestamp;
  last_error: Generated<string>;
  updated_at: Generated<Date>;
}

export interface DsyncWebhookLogsTable {
  id: string;
  directory_id: string;
  /** The event of a real-time log row (one row per event); null for batch POSTs and embedder logs. */
  event_id: string | null;
  webhook_endpoint: string;
  payload: Json<unknown>;
  /** `pending`, `delivered`, `failed`; null on rows written before sql/0280. */
  status: 'pending' | 'delivered' | 'failed' | null;
  /** Null while pending. */
  status_code: number | null;
  delivered: boolean;
  error: string | null;
  attempt: number;
  created_at: Timestamp;
  /** Null while pending. */
  completed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  duration_ms: number | null;
}

/** One row per cloud-synced directory (sql/0170): the lease of the run in progress and the last outcome. */
export interface DsyncCloudSyncsTable {
  directory_id: string;
  lease_owner: string | null;
  lease_until: Date | null;
  status: 'running' | 'completed' | 'failed' | 'stopped';
  started_at: Date;
  finished_at: Date | null;
  error: Generated<string>;
  stats: Json<Record<string, unknown>> | null;
}

export interface DsyncTables {
  dsync_directories: DsyncDirectoriesTable;
  dsync_users: DsyncUsersTable;
  dsync_groups: DsyncGroupsTable;
  dsync_scim_activity: DsyncScimActivityTable;
  dsync_group_members: DsyncGroupMembersTable;
  dsync_events: DsyncEventsTable;
  dsync_events_purged: DsyncEventsPurgedTable;
  dsync_setup_links: DsyncSetupLinksTable;
  dsync_webhook_outbox: DsyncWebhookOutboxTable;
  dsync_webhook_backoff: DsyncWebhookBackoffTable;
  dsync_webhook_senders: DsyncWebhookSendersTable;
  dsync_webhook_logs: DsyncWebhookLogsTable;
  dsync_cloud_syncs: DsyncCloudSyncsTable;
}

/** What directory sync's code sees of the database: the core's tables and its own. */
export type Database = CoreDatabase & DsyncTables;
export type Executor = CoreExecutor<Database>;
/** The database handle services hold (they open transactions on it with `withTx`). */
export type Db = CoreDb<Database>;

/** Column lists per table, compared with information_schema by test/http/core/schema.test.ts. */
export const DSYNC_TABLE_COLUMNS: Record<keyof DsyncTables, string[]> = {
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
    'google_domain',
    'google_customer_id',
    'google_access_token_expires_at',
    'google_groups',
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
    'employee_number',
    'cost_center',
    'organization',
    'division',
    'department',
    'manager_id',
  ],
  dsync_scim_activity: [
    'directory_id',
    'last_request_at',
    'last_method',
    'last_resource',
    'last_status',
    'last_error_at',
    'last_error_status',
    'last_error',
  ],
  dsync_groups: ['directory_id', 'id', 'name', 'external_id', 'raw', 'created_at', 'updated_at'],
  dsync_group_members: ['directory_id', 'group_id', 'user_id', 'created_at'],
  dsync_events: ['id', 'directory_id', 'seq', 'event', 'payload', 'created_at', 'delivered_at'],
  dsync_events_purged: ['directory_id', 'seq'],
  dsync_setup_links: [
    'id',
    'tenant',
    'product',
    'service',
    'name',
    'token_hash',
    'token',
    'webhook_url',
    'webhook_secret',
    'valid_till',
    'created_at',
  ],
  dsync_webhook_outbox: ['event_id', 'directory_id', 'seq', 'mode', 'job_id', 'created_at', 'logged'],
  dsync_webhook_backoff: ['directory_id', 'attempts', 'next_attempt_at', 'last_error', 'updated_at'],
  dsync_webhook_senders: ['directory_id', 'job_id', 'created_at', 'sender_id', 'failed_at'],
  dsync_webhook_logs: [
    'id',
    'directory_id',
    'webhook_endpoint',
    'payload',
    'status_code',
    'delivered',
    'error',
    'attempt',
    'created_at',
    'completed_at',
    'event_id',
    'status',
    'duration_ms',
  ],
  dsync_cloud_syncs: [
    'directory_id',
    'lease_owner',
    'lease_until',
    'status',
    'started_at',
    'finished_at',
    'error',
    'stats',
  ],
};
