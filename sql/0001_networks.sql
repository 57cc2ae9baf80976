-- Networks: every OAuth2 table carries `nid` (Hydra's network id), so one database can hold
-- several isolated tenants of the authorization server. gatehouse uses one default network.
CREATE TABLE networks (
  id uuid PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO networks (id) VALUES ('00000000-0000-4000-8000-000000000000');
