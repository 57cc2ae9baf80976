-- Directory-sync setup links (Jackson's `/api/v1/dsync/setuplinks`): a link lets a tenant's IT
-- administrator configure the tenant's directories (create, read, deactivate, delete; start the
-- Google authorization) without the admin API. One link per tenant+product (Jackson's setupID is
-- a digest of tenant, product and service); it expires at `valid_till` and is revoked by deletion.
-- The token is looked up by its SHA-256 (`token_hash`) and kept sealed (`token`, AES-256-GCM under
-- the `dsync` key) because the API returns the link's URL; the webhook secret is sealed too.
CREATE TABLE dsync_setup_links (
  id text PRIMARY KEY,
  tenant text NOT NULL,
  product text NOT NULL,
  service text NOT NULL DEFAULT 'dsync',
  name text NOT NULL DEFAULT '',
  token_hash text NOT NULL UNIQUE,
  token text NOT NULL,
  webhook_url text NOT NULL,
  webhook_secret text NOT NULL,
  valid_till timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant, product, service)
);
CREATE INDEX dsync_setup_links_product_idx ON dsync_setup_links (product, created_at DESC);

-- gatehouse:down
DROP TABLE dsync_setup_links;
