-- CockroachDB variant of sql/0260_dsync_write_functions_plans.sql: it replaces the one-call SCIM
-- functions of sql/0240, which CockroachDB never had (see sql/cockroach/0240_dsync_write_functions.sql;
-- every SCIM write keeps the statement-by-statement path there), so nothing is created here.
SELECT 1;
