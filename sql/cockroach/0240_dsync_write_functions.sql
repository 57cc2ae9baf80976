-- CockroachDB variant of sql/0240_dsync_write_functions.sql (the migrator uses it instead on CockroachDB;
-- see src/core/db/migrate.ts). The one-call SCIM writes are PL/pgSQL functions that take advisory locks
-- and call graphile-worker's add_job; CockroachDB has neither advisory locks nor that PL/pgSQL subset.
-- On CockroachDB every SCIM write keeps the statement-by-statement path (src/dsync/scim/one-call.ts
-- is used on PostgreSQL only), so nothing is created here.
SELECT 1;
