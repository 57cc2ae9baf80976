/** Login sessions (`oauth2_login_sessions`). */
import { sql } from 'kysely';
import { engineOf } from '../../core/db/engine.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';
import type { LogoutClient } from './logout.ts';

export interface LoginSession {
  id: string;
  subject: string;
  authenticatedAt: Date;
  remember: boolean;
  expiresAt: Date;
  identityProviderSessionId: string;
}

type Row = {
  id: string;
  subject: string;
  authenticated_at: Date;
  remember: boolean;
  expires_at: Date;
  identity_provider_session_id: string;
};

const toSession = (r: Row): LoginSession => ({
  id: r.id,
  subject: r.subject,
  authenticatedAt: r.authenticated_at,
  remember: r.remember,
  expiresAt: r.expires_at,
  identityProviderSessionId: r.identity_provider_session_id,
});

/** A remembered, unexpired session by id. */
export async function findRememberedLoginSession(db: Executor, id: string, now: Date) {
  const r = await db
    .selectFrom('oauth2_login_sessions')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .where('remember', '=', true)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return r ? toSession(r) : undefined;
}

/** Creates or refreshes a session (Hydra's ConfirmLoginSession upsert). */
/** The columns the upsert sets (all but the key). */
export const loginSessionValues = (s: LoginSession) => ({
  authenticated_at: s.authenticatedAt,
  subject: s.subject,
  remember: s.remember,
  identity_provider_session_id: s.identityProviderSessionId,
  expires_at: s.expiresAt,
});

export async function deleteLoginSession(db: Executor, id: string): Promise<LoginSession | undefined> {
  const r = await db
    .deleteFrom('oauth2_login_sessions')
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return r ? toSession(r) : undefined;
}

/** How many login sessions a subject has (the CLI's progress total). */
export async function countLoginSessions(db: Executor, subject: string): Promise<number> {
  const r = await db
    .selectFrom('oauth2_login_sessions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('nid', '=', DEFAULT_NID)
    .where('subject', '=', subject)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

/**
 * Deletes the next at most `limit` login sessions of a subject, in `id` order after `after` (one
 * bounded statement, a range scan of oauth2_login_sessions_subject_id_idx that starts where the
 * previous batch ended: the caller's transaction stays small however many sessions the subject has,
 * and no batch walks over the rows earlier batches deleted; `= any(array(…))`, not `in (…)`, so
 * that the rows are deleted through primary-key lookups, never a hash join over the whole table).
 * In the same statement, the clients
 * with a front- or back-channel logout URI that took part in each deleted session (the lookup of
 * src/oauth2/store/logout.ts, per session). Returns the deleted ids in order and those clients.
 */
export async function deleteLoginSessionBatch(
  db: Executor,
  subject: string,
  after: string,
  limit: number,
): Promise<{ ids: string[]; clients: LogoutClient[] }> {
  // clients.id is COLLATE "C" on PostgreSQL (the join then uses the primary key); CockroachDB's
  // strings compare byte-wise without one (as in store/logout.ts).
  const clientJoin = engineOf(db) === 'postgres' ? sql`c.id = f.client_id collate "C"` : sql`c.id = f.client_id`;
  const { rows } = await sql<{
    id: string;
    clientId: string | null;
    frontchannelLogoutUri: string | null;
    backchannelLogoutUri: string | null;
  }>`with d as (
      delete from oauth2_login_sessions
      where nid = ${DEFAULT_NID} and id = any(array(
        select id from oauth2_login_sessions
        where nid = ${DEFAULT_NID} and subject = ${subject} and id > ${after}
        order by id limit ${limit}))
      returning id
    )
    select d.id, l.id as "clientId", l.frontchannel_logout_uri as "frontchannelLogoutUri",
      l.backchannel_logout_uri as "backchannelLogoutUri"
    from d left join lateral (
      select distinct c.id, c.frontchannel_logout_uri, c.backchannel_logout_uri
      from oauth2_flows f
      join oauth2_clients c on c.nid = f.nid and ${clientJoin}
      where f.nid = ${DEFAULT_NID} and f.login_session_id = d.id
        and (c.frontchannel_logout_uri <> '' or c.backchannel_logout_uri <> '')
    ) l on true
    order by d.id, l.id`.execute(db);
  const ids: string[] = [];
  const clients: LogoutClient[] = [];
  for (const r of rows) {
    if (ids.at(-1) !== r.id) ids.push(r.id);
    if (r.clientId !== null)
      clients.push({
        sid: r.id,
        clientId: r.clientId,
        frontchannelLogoutUri: r.frontchannelLogoutUri ?? '',
        backchannelLogoutUri: r.backchannelLogoutUri ?? '',
      });
  }
  return { ids, clients };
}
