/**
 * Is a DSN a transaction-pooling connection pooler (PgBouncer's `pool_mode = transaction`, or
 * statement pooling)? Such a pooler hands each transaction to whichever server session is free:
 * session state, LISTEN/NOTIFY and session advisory locks then fail silently (PgBouncer drops a
 * notification that arrives on an unassigned server connection with only a warning in its own log).
 * The probe: two connections open at the same time, each asks for its server session's process
 * id. Directly on PostgreSQL (or through a session pooler) two open connections are always two
 * sessions; through a transaction pooler the second connection is served by the session the first
 * one just released (PgBouncer reuses the most recently used server connection). Equal ids prove a
 * transaction pooler; different ids prove nothing, so a direct connection is never taken for one.
 * A direct connection is recognised at once: the process id PostgreSQL announced at start-up
 * (BackendKeyData) is its `pg_backend_pid()`, where a pooler announces a key of its own.
 */
import pg from 'pg';

async function open(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'gatehouse-pooler-probe' });
  c.on('error', () => {});
  await c.connect();
  return c;
}

const pid = async (c: pg.Client) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;

/**
 * Whether a connected client talks to a PostgreSQL session directly: the process id announced at
 * start-up is the session's own. Through any pooler (session or transaction mode) this is false.
 */
export async function directSession(c: pg.Client): Promise<boolean> {
  const announced = (c as pg.Client & { processID: number | null }).processID;
  return announced !== null && announced === (await pid(c));
}

/** True when `url` reaches PostgreSQL through a transaction (or statement) pooler. */
export async function behindTransactionPooler(url: string, rounds = 5): Promise<boolean> {
  const a = await open(url);
  try {
    if (await directSession(a)) return false;
    const b = await open(url);
    try {
      for (let i = 0; i < rounds; i++) {
        const pa = await pid(a);
        if (pa !== undefined && pa === (await pid(b))) return true;
      }
      return false;
    } finally {
      await b.end().catch(() => {});
    }
  } finally {
    await a.end().catch(() => {});
  }
}
