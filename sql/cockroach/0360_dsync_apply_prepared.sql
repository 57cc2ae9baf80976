-- CockroachDB variant of sql/0360_dsync_apply_prepared.sql: CockroachDB has no gatehouse_dsync_apply
-- (see sql/cockroach/0270_dsync_apply.sql). Its statement-by-statement path (src/dsync/change/apply.ts)
-- runs a statement that comes with arguments as a parameterized statement, and the plans it makes
-- carry no PostgreSQL row versions, so nothing is created here.
SELECT 1;
