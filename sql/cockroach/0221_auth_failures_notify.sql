-- CockroachDB variant of sql/0221_auth_failures_notify.sql (the migrator uses it instead on CockroachDB; see
-- src/core/db/migrate.ts). CockroachDB has neither LISTEN/NOTIFY nor statement-level triggers: no
-- change trigger on auth_failures. Processes on CockroachDB never listen for changes, so the
-- failed-authentication counts are read on every checked request and nothing is lost.
SELECT 1;
