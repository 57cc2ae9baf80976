-- CockroachDB variant of sql/0350_dsync_apply_created_at.sql: CockroachDB has no
-- gatehouse_dsync_apply (see sql/cockroach/0270_dsync_apply.sql); its statement-by-statement path
-- stamps the events once the directory row is locked (src/dsync/change/apply.ts), so nothing is
-- changed here.
SELECT 1;
