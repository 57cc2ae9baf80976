/**
 * The clients to notify when login sessions end (front- and back-channel logout): ONE query joins
 * the flow rows of the sessions, found through `oauth2_flows_logout_clients_idx` (nid,
 * login_session_id) INCLUDE (client_id), to the clients that registered a logout URI (primary key
 * lookups). Flows discarded by `feature_flags.discard_skipped_consents` have no row, so their
 * clients are not found (documented: logout notifications do not work for them).
 */
import { sql } from 'kysely';
import { engineOf } from '../../core/db/engine.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';

export interface LogoutClient {
  /** The login session the client took part in. */
  sid: string;
  clientId: string;
  /** '' when the client has none. */
  frontchannelLogoutUri: string;
  backchannelLogoutUri: string;
}

/** The query itself (exported so a test can EXPLAIN it). */
export function logoutClientsQuery(db: Executor, sids: readonly string[]) {
  return (
    db
      .selectFrom('oauth2_flows as f')
      // clients.id is COLLATE "C" on PostgreSQL; comparing in that collation lets the join use the
      // primary key. CockroachDB's strings compare byte-wise without one (sql/cockroach/0010).
      .innerJoin('oauth2_clients as c', (j) =>
        engineOf(db) === 'postgres'
          ? j.onRef('c.nid', '=', 'f.nid').on(sql<boolean>`c.id = f.client_id collate "C"`)
          : j.onRef('c.nid', '=', 'f.nid').onRef('c.id', '=', 'f.client_id'),
      )
      .select([
        'f.login_session_id as sid',
        'c.id as clientId',
        'c.frontchannel_logout_uri as frontchannelLogoutUri',
        'c.backchannel_logout_uri as backchannelLogoutUri',
      ])
      .distinct()
      .where('f.nid', '=', DEFAULT_NID)
      .where(sql<boolean>`f.login_session_id = any(${[...sids]}::text[])`)
      .where((eb) => eb.or([eb('c.frontchannel_logout_uri', '<>', ''), eb('c.backchannel_logout_uri', '<>', '')]))
      .orderBy('f.login_session_id')
      .orderBy('c.id')
  );
}

/** Every (session, client) pair with a front- or back-channel logout URI, for the given sessions. */
export async function listLogoutClients(db: Executor, sids: readonly string[]): Promise<LogoutClient[]> {
  if (!sids.length) return [];
  return logoutClientsQuery(db, sids).execute();
}
