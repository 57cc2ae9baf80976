-- CockroachDB variant of sql/0220_oauth2_access_tokens_notify.sql (the migrator uses it instead on CockroachDB;
-- see src/core/db/migrate.ts). CockroachDB has neither LISTEN/NOTIFY nor statement-level triggers: no
-- change trigger on oauth2_access_tokens. Processes on CockroachDB never listen for changes, so
-- introspection reads the token row on every request and nothing is lost.
SELECT 1;
