/**
 * Change notifications between processes: one dedicated connection per process LISTENs on
 * `gatehouse_changes`, where triggers NOTIFY the name of what changed (`jwk`, `client`, `token`:
 * access tokens deleted, `auth_failure`: failed-authentication counts, `directory`). Caches of derived documents compare a per-topic version number, which moves on every notification, on a local
 * `bump`, and on every loss of the connection (notifications may have been missed). A cache may
 * trust its entry only while `live()`: the LISTEN is in place; before that (and while reconnecting)
 * readers rebuild per use, as without a cache.
 * LISTEN needs a session of its own: through a transaction-pooling pooler (PgBouncer) a
 * notification is silently lost. Unless told its URL is direct, the feed listens only on a
 * connection it has verified to be one: the backend process id PostgreSQL announced at start-up
 * (the BackendKeyData message) is the id `pg_backend_pid()` reports. A pooler sends a key of its
 * own, so through any pooler the ids differ. Then the feed never goes live (caches rebuild per use,
 * which is correct, only slower) and says once that `queue.direct_dsn` gives it a direct
 * connection. (A probe of the pooling mode cannot decide this reliably while other traffic runs
 * through the pooler: the test must never take a transaction pooler for a direct connection.)
 */
import pg from 'pg';
import type { Logger } from '../log.ts';
import { directSession } from './pooler.ts';

export const CHANGES_CHANNEL = 'gatehouse_changes';
export type ChangeTopic = 'jwk' | 'client' | 'token' | 'auth_failure' | 'directory';

export interface ChangeFeed {
  /** Moves whenever `topic` may have changed. Starts the listener on first use. */
  version(topic: ChangeTopic): number;
  /** Whether notifications are being received (so that an unchanged version means unchanged data). */
  live(): boolean;
  /** This process changed `topic` (the notification follows after commit; readers must not wait for it). */
  bump(topic: ChangeTopic): void;
  close(): Promise<void>;
}

export function createChangeFeed(o: {
  url: string;
  log: Logger;
  retryMs?: number;
  /** The URL is a direct connection (no pooler check). */
  direct?: boolean;
  /** false: never listen (CockroachDB has no LISTEN/NOTIFY); caches rebuild per use. */
  listen?: boolean;
}): ChangeFeed {
  const versions = new Map<string, number>();
  let generation = 0;
  let client: pg.Client | undefined;
  let listening = false;
  let started = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const bumpAll = () => {
    generation++;
  };
  const bump = (topic: string) => versions.set(topic, (versions.get(topic) ?? 0) + 1);

  function lost(c: pg.Client) {
    if (client !== c) return;
    client = undefined;
    listening = false;
    bumpAll();
    c.end().catch(() => undefined);
    if (!closed) {
      timer = setTimeout(connect, o.retryMs ?? 1000);
      timer.unref();
    }
  }

  function connect() {
    if (closed) return;
    const c = new pg.Client({ connectionString: o.url });
    client = c;
    c.on('notification', (n) => {
      if (n.channel === CHANGES_CHANNEL && n.payload) bump(n.payload);
    });
    c.on('error', (e) => {
      o.log.warn({ err: e.message }, 'change notifications: connection lost; caches rebuild per use until it is back');
      lost(c);
    });
    c.on('end', () => lost(c));
    c.connect()
      .then(() => o.direct || directSession(c))
      .then(async (direct) => {
        if (client !== c) return;
        if (!direct) return behindPooler(c);
        await c.query(`LISTEN ${CHANGES_CHANNEL}`);
        if (client !== c) return;
        // Anything may have changed while nobody listened.
        bumpAll();
        listening = true;
      })
      .catch((e: Error) => {
        o.log.warn({ err: e.message }, 'change notifications: cannot listen; caches rebuild per use');
        lost(c);
      });
  }

  // Not a direct session: stop for good (reconnecting would find the same pooler).
  function behindPooler(c: pg.Client) {
    client = undefined;
    c.removeAllListeners('end');
    c.end().catch(() => undefined);
    o.log.warn(
      'change notifications: dsn does not reach PostgreSQL directly (a connection pooler answers), and LISTEN cannot work through a transaction-pooling one; caches of keys, clients, tokens and discovery documents rebuild per use. Set queue.direct_dsn to a direct PostgreSQL connection to cache them.',
    );
  }

  const start = () => {
    if (started || closed) return;
    started = true;
    if (o.listen === false) return;
    connect();
  };

  return {
    version(topic) {
      start();
      return generation * 1_000_000_000 + (versions.get(topic) ?? 0);
    },
    live() {
      start();
      return listening;
    },
    bump,
    async close() {
      closed = true;
      listening = false;
      if (timer) clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
