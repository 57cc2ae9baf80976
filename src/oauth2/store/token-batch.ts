/**
 * Group commit of access-token rows written outside a transaction (the machine grants without
 * audit rows): rows that concurrent requests want written while earlier writes are still under way
 * go to PostgreSQL together, as one `INSERT … VALUES (…), (…)` — one round trip and one commit (one
 * WAL flush) for all of them. Every caller is answered only once its own row is committed, so a
 * token is never handed out before it exists for introspection and revocation.
 *
 * A row is sent at once while fewer than `MAX_IN_FLIGHT` writes are under way (an idle server adds
 * no wait); otherwise it waits for the next free slot, with the rows that queued meanwhile (at most
 * `MAX_ROWS` per statement). Should a batch fail, each of its rows is written on its own, so that
 * every request gets its own answer (and only a row that fails by itself fails its request).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../tables.ts';
import { insertAccessToken, insertAccessTokens, type TokenRecord } from './tokens.ts';

type Row = TokenRecord & { expiresAt: Date };

/** Statements under way at once per process (a part of `db.pool.max`, which other work shares). */
const MAX_IN_FLIGHT = 4;
/** Rows per statement (parameters per statement stay far below PostgreSQL's 65,535). */
const MAX_ROWS = 200;

interface Waiting {
  row: Row;
  resolve: () => void;
  reject: (e: unknown) => void;
}

class TokenBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;

  private readonly db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  insert(row: Row): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length) {
      const batch = this.queue.splice(0, MAX_ROWS);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async write(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) {
      const [w] = batch as [Waiting];
      return insertAccessToken(this.db, w.row).then(w.resolve, w.reject);
    }
    try {
      await insertAccessTokens(
        this.db,
        batch.map((w) => w.row),
      );
      for (const w of batch) w.resolve();
    } catch {
      // Nothing of the statement was committed: each row again on its own, for its own answer.
      await Promise.all(batch.map((w) => insertAccessToken(this.db, w.row).then(w.resolve, w.reject)));
    }
  }
}

const batchers = new WeakMap<Kysely<Database>, TokenBatcher>();

/** Writes an access-token row outside any transaction, grouped with concurrent ones (see above). */
export function insertAccessTokenGrouped(db: Kysely<Database>, row: Row): Promise<void> {
  let b = batchers.get(db);
  if (!b) {
    b = new TokenBatcher(db);
    batchers.set(db, b);
  }
  return b.insert(row);
}
