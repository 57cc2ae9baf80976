-- Google Workspace directories can sync chosen groups only (src/dsync/cloud/google/sync.ts): the
-- groups' emails (or Google ids), set through the management API (`google_groups`). Empty: every
-- group and every user, as before. With groups chosen, a sync keeps those groups, their USER
-- members and their memberships, and deletes the users and groups it stored before that are not
-- among them (with their events).
ALTER TABLE dsync_directories ADD COLUMN google_groups text[] NOT NULL DEFAULT '{}';
