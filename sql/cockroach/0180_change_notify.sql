-- CockroachDB variant of sql/0180_change_notify.sql (the migrator uses it instead on CockroachDB; see
-- src/core/db/migrate.ts). CockroachDB has neither LISTEN/NOTIFY nor statement-level
-- triggers: no change trigger on jwk_keys. Processes on CockroachDB never listen for changes (their
-- caches of keys and clients rebuild per use), so nothing is lost.
SELECT 1;
