-- gatehouse:required-by-code
-- The enterprise extension of a SCIM user (RFC 7643 §4.3,
-- urn:ietf:params:scim:schemas:extension:enterprise:2.0:User) as columns of dsync_users, so that the
-- management API and SCIM filters find users by them with an index: employeeNumber, costCenter,
-- organization, division, department and the manager's id (manager.value). They are copies of the
-- stored resource (`raw`), written with it (src/dsync/store/steps.ts), null when absent. The partial
-- indexes cost nothing for users without the value.
ALTER TABLE dsync_users ADD COLUMN employee_number text;
ALTER TABLE dsync_users ADD COLUMN cost_center text;
ALTER TABLE dsync_users ADD COLUMN organization text;
ALTER TABLE dsync_users ADD COLUMN division text;
ALTER TABLE dsync_users ADD COLUMN department text;
ALTER TABLE dsync_users ADD COLUMN manager_id text;

UPDATE dsync_users SET
  employee_number = CASE WHEN json_typeof(e) = 'object' THEN nullif(e ->> 'employeeNumber', '') END,
  cost_center = CASE WHEN json_typeof(e) = 'object' THEN nullif(e ->> 'costCenter', '') END,
  organization = CASE WHEN json_typeof(e) = 'object' THEN nullif(e ->> 'organization', '') END,
  division = CASE WHEN json_typeof(e) = 'object' THEN nullif(e ->> 'division', '') END,
  department = CASE WHEN json_typeof(e) = 'object' THEN nullif(e ->> 'department', '') END,
  manager_id = CASE WHEN json_typeof(e) = 'object' AND json_typeof(e -> 'manager') = 'object'
    THEN nullif(e -> 'manager' ->> 'value', '') END
FROM (SELECT directory_id AS d, id AS i, raw -> 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User' AS e
      FROM dsync_users) x
WHERE dsync_users.directory_id = x.d AND dsync_users.id = x.i AND x.e IS NOT NULL;

CREATE INDEX dsync_users_employee_number_idx ON dsync_users (directory_id, employee_number) WHERE employee_number IS NOT NULL;
CREATE INDEX dsync_users_cost_center_idx ON dsync_users (directory_id, lower(cost_center)) WHERE cost_center IS NOT NULL;
CREATE INDEX dsync_users_organization_idx ON dsync_users (directory_id, lower(organization)) WHERE organization IS NOT NULL;
CREATE INDEX dsync_users_division_idx ON dsync_users (directory_id, lower(division)) WHERE division IS NOT NULL;
CREATE INDEX dsync_users_department_idx ON dsync_users (directory_id, lower(department)) WHERE department IS NOT NULL;
CREATE INDEX dsync_users_manager_idx ON dsync_users (directory_id, manager_id) WHERE manager_id IS NOT NULL;
