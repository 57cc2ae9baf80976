/**
 * The core's tables, typed for kysely: one interface per table of sql/ that the core itself reads
 * and writes (locks, the job outbox, worker liveness, failed authentications, audit events). Each
 * domain declares its own tables beside its SQL (`src/<domain>/tables.ts`, the console's in
 * `src/console/tables.ts`); `src/database.ts` joins them into the whole program's `Database`.
 * Changes in the same commit as the migration; test/http/core/schema.test.ts compares the joined
 * column lists with information_schema.
 */
import type { ColumnType, Generated } from 'kysely';

export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
export type Json<T = unknown> = ColumnType<T, string, string>;

/** Lock rows of CockroachDB (sql/0210_gatehouse_locks.sql); unused on PostgreSQL. */
export interface GatehouseLocksTable {
  bucket: number;
  taken: Generated<string>;
}

export interface GatehouseJobOutboxTable {
  id: Generated<string>;
  op: string;
  task: string;
  payload: unknown;
  spec: unknown;
  created_at: Generated<Date>;
}

export interface WorkerPoolsTable {
  id: string;
  hostname: string;
  pid: number;
  started_at: Generated<Date>;
}

/** Failed authentications per hashed key and fixed window (sql/0193, src/core/http/auth-failures.ts). */
export interface AuthFailuresTable {
  key: string;
  window_start: Date;
  failures: number;
}

export interface AuditEventsTable {
  id: Generated<number>;
  time: Generated<Date>;
  type: string;
  actor_kind: string;
  actor_id: string;
  target_kind: string;
  target_id: string;
  outcome: string;
  request_id: string;
  trace_id: string;
  details: Json<Record<string, unknown>>;
}

/** What core code sees of the database: its own tables (a domain's view adds its tables to these). */
export interface CoreDatabase {
  gatehouse_job_outbox: GatehouseJobOutboxTable;
  gatehouse_locks: GatehouseLocksTable;
  worker_pools: WorkerPoolsTable;
  auth_failures: AuthFailuresTable;
  audit_events: AuditEventsTable;
}

/** Column lists per table, compared with information_schema in a test so this file cannot drift. */
export const CORE_TABLE_COLUMNS: Record<keyof CoreDatabase, string[]> = {
  audit_events: [
    'id',
    'time',
    'type',
    'actor_kind',
    'actor_id',
    'target_kind',
    'target_id',
    'outcome',
    'request_id',
    'trace_id',
    'details',
  ],
  gatehouse_job_outbox: ['id', 'op', 'task', 'payload', 'spec', 'created_at'],
  gatehouse_locks: ['bucket', 'taken'],
  worker_pools: ['id', 'hostname', 'pid', 'started_at'],
  auth_failures: ['key', 'window_start', 'failures'],
};
