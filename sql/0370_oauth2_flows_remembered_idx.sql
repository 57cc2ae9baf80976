-- gatehouse:no-transaction
-- The remembered consent of a subject for a client (src/oauth2/store/flows.ts, confirmLogin: the
-- newest consent with `remember` and without `consent_skip`, read at every login re-entry) came
-- from oauth2_flows_subject_client_idx, which holds every consent of the pair: a subject who had
-- consented many times without "remember" (a service account, a user who never ticks the box, a
-- test identity) made each read walk all of those entries before finding none. This index holds
-- only the rows that can answer, so the read costs the same whatever else the pair has.
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth2_flows_remembered_idx
  ON oauth2_flows (nid, subject, client_id, requested_at DESC)
  WHERE remember AND NOT consent_skip;
