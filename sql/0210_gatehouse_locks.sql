-- Named transaction locks on engines without advisory locks (CockroachDB): a fixed set of rows,
-- one per bucket of a hash of the lock name, locked by updating the row (src/core/db/locks.ts).
-- PostgreSQL uses advisory locks and never touches the table.
CREATE TABLE gatehouse_locks (
  bucket integer PRIMARY KEY,
  taken bigint NOT NULL DEFAULT 0
);
INSERT INTO gatehouse_locks (bucket) SELECT generate_series(0, 16383);

-- gatehouse:down
DROP TABLE gatehouse_locks;
