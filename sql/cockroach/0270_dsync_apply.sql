-- CockroachDB variant of sql/0270_dsync_apply.sql: CockroachDB never had the write functions of
-- sql/0240 (see sql/cockroach/0240_dsync_write_functions.sql), and it applies a planned directory
-- change statement by statement in one transaction (src/dsync/change/apply.ts), the same reads,
-- writes and events in the same order, so nothing is created here.
SELECT 1;
