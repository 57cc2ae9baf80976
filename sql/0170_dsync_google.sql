-- gatehouse:required-by-code
-- Google Workspace (cloud directory) sync.
--
-- dsync_directories gains the workspace domain and the expiry of the stored access token (the
-- tokens themselves are the sealed google_*_token columns of 0100), so an expired token is
-- refreshed before it is used and the refreshed one is stored (Jackson never stored it).
--
-- dsync_cloud_syncs holds one row per synced directory: the lease of the run in progress (so two
-- schedulers, the CLI and the library can never sync one directory at the same time; a crashed
-- run's lease simply expires) and the outcome of the last run.
ALTER TABLE dsync_directories
  ADD COLUMN google_domain text NOT NULL DEFAULT '',
  ADD COLUMN google_access_token_expires_at timestamptz;

CREATE TABLE dsync_cloud_syncs (
  directory_id uuid PRIMARY KEY REFERENCES dsync_directories (id) ON DELETE CASCADE,
  -- the run holding the lease, and until when (renewed after every page)
  lease_owner uuid,
  lease_until timestamptz,
  status text NOT NULL DEFAULT 'running',
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  -- why the last run failed (no tokens, no addresses); '' after a run that completed
  error text NOT NULL DEFAULT '',
  -- counts of the last run (users/groups created, updated, deleted; memberships; events; pages)
  stats json,
  CONSTRAINT dsync_cloud_syncs_status_check CHECK (status IN ('running', 'completed', 'failed', 'stopped'))
);

-- gatehouse:down
DROP TABLE dsync_cloud_syncs;
ALTER TABLE dsync_directories DROP COLUMN google_access_token_expires_at, DROP COLUMN google_domain;
