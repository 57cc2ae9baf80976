/**
 * Group commit: rows that concurrent requests want written while earlier writes are still under way
 * go to PostgreSQL together, as one multi-row statement — one round trip and one commit (one WAL
 * flush) for all of them. Every caller is answered only once its own row is committed.
 *
 * A row is sent at once while no write is under way (an idle server adds no wait); otherwise it
 * waits for the writes under way and goes with the rows that queued meanwhile (at most `MAX_ROWS`
 * per statement) — or sooner, beside them (up to `MAX_IN_FLIGHT` writes under way), once
 * `FULL_BATCH` rows wait or the first of them has waited `MAX_WAIT_MS`, so that a slow write holds
 * the others back only that long. A statement's fixed cost (a round trip, parsing and planning,
 * the commit's WAL flush) is most of what it costs PostgreSQL for a few rows: under load, fewer
 * and larger statements cost less CPU per row on both sides. Should a batch fail, each of its rows
 * is written on its own, so that every request gets its own answer (and only a row that fails by
 * itself fails its request).
 */

/** Statements under way at once per writer and process (a part of `db.pool.max`, which other work shares). */
const MAX_IN_FLIGHT = 4;
/** Rows waiting that go without waiting for the writes under way (see above). */
const FULL_BATCH = 32;
/** How long rows wait for the writes under way before they go beside them (see above). */
const MAX_WAIT_MS = 20;
/** Rows per statement (parameters per statement stay far below PostgreSQL's 65,535). */
const MAX_ROWS = 200;

interface Waiting<Row, Result> {
  row: Row;
  resolve: (r: Result) => void;
  reject: (e: unknown) => void;
}

export interface GroupWrites<Row, Result> {
  /** Writes one row. */
  one(row: Row): Promise<Result>;
  /** Writes several rows in one statement; the results in the order of `rows`. */
  many(rows: Row[]): Promise<Result[]>;
}

export class GroupCommit<Row, Result> {
  private queue: Array<Waiting<Row, Result>> = [];
  private inFlight = 0;
  /** The timer of the rows waiting (see above). */
  private waiting: NodeJS.Timeout | undefined;
  private readonly writes: GroupWrites<Row, Result>;

  constructor(writes: GroupWrites<Row, Result>) {
    this.writes = writes;
  }

  submit(row: Row): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.pump();
    });
  }

  /** Sends what may go now (see above); `overdue`: rows have waited `MAX_WAIT_MS`. */
  private pump(overdue = false): void {
    while (
      this.queue.length &&
      (this.inFlight === 0 || (this.inFlight < MAX_IN_FLIGHT && (overdue || this.queue.length >= FULL_BATCH)))
    ) {
      const batch = this.queue.splice(0, MAX_ROWS);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
    if (!this.queue.length) {
      clearTimeout(this.waiting);
      this.waiting = undefined;
    } else if (!this.waiting) {
      this.waiting = setTimeout(() => {
        this.waiting = undefined;
        this.pump(true);
      }, MAX_WAIT_MS);
      this.waiting.unref();
    }
  }

  private async write(batch: Array<Waiting<Row, Result>>): Promise<void> {
    if (batch.length === 1) {
      const [w] = batch as [Waiting<Row, Result>];
      return this.writes.one(w.row).then(w.resolve, w.reject);
    }
    let results: Result[];
    try {
      results = await this.writes.many(batch.map((w) => w.row));
    } catch {
      // Nothing of the statement was committed: each row again on its own, for its own answer.
      await Promise.all(batch.map((w) => this.writes.one(w.row).then(w.resolve, w.reject)));
      return;
    }
    for (const [i, w] of batch.entries()) w.resolve(results[i] as Result);
  }
}

/** One writer per database handle and kind of row. */
export function perHandle<H extends object, Row, Result>(
  make: (handle: H) => GroupWrites<Row, Result>,
): (handle: H) => GroupCommit<Row, Result> {
  const writers = new WeakMap<H, GroupCommit<Row, Result>>();
  return (handle) => {
    let w = writers.get(handle);
    if (!w) {
      w = new GroupCommit(make(handle));
      writers.set(handle, w);
    }
    return w;
  };
}
