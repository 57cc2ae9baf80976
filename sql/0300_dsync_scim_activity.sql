-- The last SCIM request a directory received and the last one it refused, for the setup page's
-- connection panel (src/dsync/setup-page.ts): written by the SCIM endpoint after an authenticated
-- request, at most every few seconds per directory and process (src/dsync/scim/activity.ts), so it
-- costs the write path nothing measurable. Errors are the SCIM error's status and detail (no body,
-- no address, no secret).
CREATE TABLE dsync_scim_activity (
  directory_id uuid PRIMARY KEY REFERENCES dsync_directories (id) ON DELETE CASCADE,
  last_request_at timestamptz NOT NULL,
  last_method text NOT NULL,
  last_resource text NOT NULL,
  last_status integer NOT NULL,
  last_error_at timestamptz,
  last_error_status integer,
  last_error text
);
