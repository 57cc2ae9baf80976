-- Live graphile-worker pools of gatehouse worker processes. Each pool holds a session advisory lock
-- on its id for as long as its process lives; a pool whose row is here but whose lock is free has
-- died (SIGKILL, crash, lost host), and the other workers force-unlock its jobs at once instead of
-- waiting for graphile-worker's 4-hour stale-lock sweep.
CREATE TABLE worker_pools (
  id text PRIMARY KEY,
  hostname text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now()
);
