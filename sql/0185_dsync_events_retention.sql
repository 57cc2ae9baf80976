-- gatehouse:required-by-code
-- Retention of directory-sync events (`dsync.events.retention`): the purge deletes the oldest
-- events of each directory and records here the highest `seq` it deleted, so that the events API
-- steps over purged numbers (and only those) when it reads a directory's events in order.
CREATE TABLE dsync_events_purged (
  directory_id uuid PRIMARY KEY REFERENCES dsync_directories (id) ON DELETE CASCADE,
  seq bigint NOT NULL
);

-- gatehouse:down
DROP TABLE dsync_events_purged;
