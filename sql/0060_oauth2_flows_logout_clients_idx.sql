-- gatehouse:no-transaction
-- gatehouse:required-by-code
-- Front- and back-channel logout find the clients that took part in a login session with ONE
-- query: the flow rows of the session (nid, login_session_id) joined to the clients that have a
-- front- or back-channel logout URI (src/oauth2/store/logout.ts). The index carries client_id, so
-- the flow side is an index-only scan. It has the key columns of oauth2_flows_login_session_idx
-- (sql/0041), which it replaces. On CockroachDB the lookup query fails without it (a query that
-- needs a missing index is refused there): run `gatehouse migrate sql` before rolling out this
-- release.
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_flows_logout_clients_idx
  ON oauth2_flows (nid, login_session_id) INCLUDE (client_id);
DROP INDEX CONCURRENTLY IF EXISTS oauth2_flows_login_session_idx;
