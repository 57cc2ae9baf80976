-- gatehouse:required-by-code
-- CockroachDB variant of sql/0290_dsync_users_enterprise.sql: the same columns and indexes, one
-- statement each. Users stored before it get their columns with their next write (CockroachDB does
-- not show a column added in a transaction to the statements after it in that transaction).
ALTER TABLE dsync_users ADD COLUMN employee_number text;
ALTER TABLE dsync_users ADD COLUMN cost_center text;
ALTER TABLE dsync_users ADD COLUMN organization text;
ALTER TABLE dsync_users ADD COLUMN division text;
ALTER TABLE dsync_users ADD COLUMN department text;
ALTER TABLE dsync_users ADD COLUMN manager_id text;
CREATE INDEX dsync_users_employee_number_idx ON dsync_users (directory_id, employee_number) WHERE employee_number IS NOT NULL;
CREATE INDEX dsync_users_cost_center_idx ON dsync_users (directory_id, lower(cost_center)) WHERE cost_center IS NOT NULL;
CREATE INDEX dsync_users_organization_idx ON dsync_users (directory_id, lower(organization)) WHERE organization IS NOT NULL;
CREATE INDEX dsync_users_division_idx ON dsync_users (directory_id, lower(division)) WHERE division IS NOT NULL;
CREATE INDEX dsync_users_department_idx ON dsync_users (directory_id, lower(department)) WHERE department IS NOT NULL;
CREATE INDEX dsync_users_manager_idx ON dsync_users (directory_id, manager_id) WHERE manager_id IS NOT NULL;
