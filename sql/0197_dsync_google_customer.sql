-- gatehouse:required-by-code
-- The Google Workspace a directory is connected to (the `customerId` Google reports for its users),
-- recorded when an authorization completes. A later authorization by an administrator of another
-- Workspace is refused unless the operator's authorization link allows replacing it, so a leaked
-- link cannot swap the tenant's users for someone else's. '' until the first authorization
-- (directories authorized before this migration record it at their next authorization).
ALTER TABLE dsync_directories ADD COLUMN google_customer_id text NOT NULL DEFAULT '';

-- gatehouse:down
ALTER TABLE dsync_directories DROP COLUMN google_customer_id;
