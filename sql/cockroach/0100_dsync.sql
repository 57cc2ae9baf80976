-- CockroachDB variant of sql/0100_dsync.sql (the migrator uses it instead on CockroachDB; see
-- src/core/db/migrate.ts). The foreign key of memberships to users is named explicitly
-- (sql/0184 drops it by the name PostgreSQL generates).
-- Directory sync (Jackson-compatible): directories, their SCIM users and groups, group memberships,
-- and the events every change produces.
--
-- Everything below a directory is keyed by (directory_id, id): a resource id is only meaningful
-- inside its directory (Jackson scoped lookups by tenant+product only, §3.10 Q1). Raw SCIM bodies
-- are `json`, not `jsonb`, so they come back with the identity provider's key order; filters cast
-- them to jsonb. Secrets (SCIM bearer secret, webhook secret, cloud tokens) are sealed with
-- AES-256-GCM under the `dsync` key of `secrets.system`.

CREATE TABLE dsync_directories (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  tenant text NOT NULL,
  product text NOT NULL,
  type text NOT NULL,
  log_webhook_events boolean NOT NULL DEFAULT false,
  deactivated boolean NOT NULL DEFAULT false,
  webhook_endpoint text NOT NULL DEFAULT '',
  webhook_secret text NOT NULL DEFAULT '',
  scim_path text NOT NULL DEFAULT '',
  scim_secret text NOT NULL DEFAULT '',
  google_access_token text NOT NULL DEFAULT '',
  google_refresh_token text NOT NULL DEFAULT '',
  -- Last event sequence number handed out for this directory (see dsync_events.seq).
  event_seq bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT dsync_directories_tenant_check CHECK (tenant <> '' AND position(':' in tenant) = 0),
  CONSTRAINT dsync_directories_product_check CHECK (product <> '' AND position(':' in product) = 0)
);
CREATE INDEX dsync_directories_tenant_product_idx ON dsync_directories (tenant, product, created_at DESC);
CREATE INDEX dsync_directories_product_idx ON dsync_directories (product, created_at DESC);
CREATE INDEX dsync_directories_created_idx ON dsync_directories (created_at DESC);

CREATE TABLE dsync_users (
  directory_id uuid NOT NULL REFERENCES dsync_directories (id) ON DELETE CASCADE,
  id text NOT NULL,
  user_name text,
  external_id text,
  email text,
  first_name text NOT NULL DEFAULT '',
  last_name text NOT NULL DEFAULT '',
  active boolean NOT NULL DEFAULT true,
  -- null when the user has no roles (the event payload then has no `roles` key)
  roles json,
  raw json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (directory_id, id)
);
-- RFC 7643 §4.1.1: userName is unique within the service provider and not case-exact.
CREATE UNIQUE INDEX dsync_users_user_name_idx ON dsync_users (directory_id, lower(user_name));
CREATE INDEX dsync_users_email_idx ON dsync_users (directory_id, lower(email));
CREATE INDEX dsync_users_external_id_idx ON dsync_users (directory_id, external_id);
CREATE INDEX dsync_users_created_idx ON dsync_users (directory_id, created_at DESC, id DESC);

CREATE TABLE dsync_groups (
  directory_id uuid NOT NULL REFERENCES dsync_directories (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  external_id text,
  raw json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (directory_id, id)
);
CREATE INDEX dsync_groups_name_idx ON dsync_groups (directory_id, lower(name));
CREATE INDEX dsync_groups_external_id_idx ON dsync_groups (directory_id, external_id);
CREATE INDEX dsync_groups_created_idx ON dsync_groups (directory_id, created_at DESC, id DESC);

-- A membership needs both ends: deleting a user or a group removes its rows (§3.10 Q8).
CREATE TABLE dsync_group_members (
  directory_id uuid NOT NULL,
  group_id text NOT NULL,
  user_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (directory_id, group_id, user_id),
  FOREIGN KEY (directory_id, group_id) REFERENCES dsync_groups (directory_id, id) ON DELETE CASCADE,
  CONSTRAINT dsync_group_members_directory_id_user_id_fkey
    FOREIGN KEY (directory_id, user_id) REFERENCES dsync_users (directory_id, id) ON DELETE CASCADE
);
CREATE INDEX dsync_group_members_user_idx ON dsync_group_members (directory_id, user_id);

-- Every change a SCIM request makes writes its DirectorySyncEvent here, in the same transaction.
-- `seq` is per directory, handed out under the directory's row lock, so it follows commit order:
-- delivery (webhooks) reads a directory's events by seq.
CREATE TABLE dsync_events (
  id uuid PRIMARY KEY,
  directory_id uuid NOT NULL REFERENCES dsync_directories (id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  event text NOT NULL,
  -- the Jackson envelope {event, tenant, product, directory_id, data}, key order kept
  payload json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (directory_id, seq)
);
CREATE INDEX dsync_events_created_idx ON dsync_events (created_at);
