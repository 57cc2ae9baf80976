-- CockroachDB variant of sql/0222_dsync_directories_notify.sql (the migrator uses it instead on CockroachDB;
-- see src/core/db/migrate.ts). CockroachDB has neither LISTEN/NOTIFY nor statement-level triggers: no
-- change trigger on dsync_directories. Processes on CockroachDB never listen for changes, so SCIM
-- requests read the directory every time and nothing is lost.
SELECT 1;
