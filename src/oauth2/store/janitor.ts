/**
 * Bounded-batch deletion of expired rows (the janitor). One statement deletes at most `limit` rows
 * whose `expires_at` has passed, found through the table's expiry index (sql/0061), so each
 * statement — its own transaction — stays small whatever the backlog. Rows that never expire
 * (NULL `expires_at`) are never selected.
 */
import { sql } from 'kysely';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';
import { announceRevocation, type TokenChanges } from './tokens.ts';

export interface ExpiringTable {
  table:
    | 'oauth2_authorization_codes'
    | 'oauth2_access_tokens'
    | 'oauth2_refresh_tokens'
    | 'oauth2_flows'
    | 'oauth2_used_consents'
    | 'oauth2_used_verifiers'
    | 'oauth2_pushed_requests'
    | 'oauth2_device_requests'
    | 'oauth2_device_challenge_attempts'
    | 'oauth2_login_sessions'
    | 'oauth2_jti_blacklist'
    | 'oauth2_trusted_jwt_bearer_issuers';
  /** Primary key column besides nid. */
  key: 'signature' | 'id' | 'consent_request_id' | 'challenge_id';
  /** When the row was made (for `keep if younger`); null: only `expires_at` is known. */
  age: 'requested_at' | 'authenticated_at' | 'created_at' | null;
}

export interface ExpiryCutoff {
  /** Rows that expired before this are due. */
  now: Date;
  /** …and were made before this (`now − keep_if_younger`). */
  madeBefore: Date;
  /**
   * Hydra's `--access-lifespan` / `--refresh-lifespan`: rows made before this (`now − lifespan`) are
   * due whatever their `expires_at` (only for tables with an age column).
   */
  issuedBefore?: Date;
}

function dueRows(t: ExpiringTable, c: ExpiryCutoff, limit: number) {
  const age = t.age ? sql`and ${sql.ref(t.age)} < ${c.madeBefore}` : sql`and expires_at < ${c.madeBefore}`;
  const expired = c.issuedBefore && t.age ? sql`${sql.ref(t.age)} < ${c.issuedBefore}` : sql`expires_at < ${c.now}`;
  return sql`select ${sql.ref(t.key)} from ${sql.table(t.table)}
    where nid = ${DEFAULT_NID} and ${expired} ${age}
    limit ${limit}`;
}

/** Deletes at most `limit` due rows of one table; returns how many went. */
export async function deleteExpiredBatch(
  db: Executor,
  t: ExpiringTable,
  c: ExpiryCutoff,
  limit: number,
  changes: TokenChanges,
) {
  if (t.table === 'oauth2_access_tokens') announceRevocation(changes);
  const r = await sql`delete from ${sql.table(t.table)}
    where nid = ${DEFAULT_NID} and ${sql.ref(t.key)} in (${dueRows(t, c, limit)})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** How many rows are due, counting no further than `limit` (for progress output). */
export async function countExpired(db: Executor, t: ExpiringTable, c: ExpiryCutoff, limit: number) {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from (${dueRows(t, c, limit)}) as due`.execute(
    db,
  );
  return rows[0]?.n ?? 0;
}
