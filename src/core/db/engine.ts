/**
 * The database engine of the data (`dsn`): PostgreSQL or CockroachDB, and everything that differs
 * between them in one place. Both are reached through the `pg` driver (CockroachDB speaks the
 * PostgreSQL wire protocol); a `cockroach://` (or `cockroachdb://`) DSN selects CockroachDB, as in
 * Ory Hydra (`cockroach://user:pass@host:26257/db?sslmode=…`).
 *
 * The engine travels with the handles a process creates: a Kysely instance on CockroachDB carries a
 * no-op plugin naming it (kysely hands its plugins on to every transaction opened on it), and pools
 * are bound with `bindEngine`; code that holds an executor asks `engineOf(executor)` rather than
 * threading a flag through every call. Anything else is PostgreSQL (no plugin, no cost).
 *
 * What CockroachDB lacks and what the code does instead (see docs/scaling.md, CockroachDB):
 * - advisory locks (`pg_advisory_*`): row locks on `gatehouse_locks` (core/db/locks.ts), and the
 *   migration lock on a row of `gatehouse_migrate_lock` (core/db/migrate.ts);
 * - LISTEN/NOTIFY (and the trigger functions that notify): the change feed never listens, caches
 *   of keys and clients rebuild per use;
 * - graphile-worker: the job queue runs on PostgreSQL only, through `queue.dsn`;
 * - migrations: a file `sql/cockroach/NNNN_name.sql` replaces `sql/NNNN_name.sql` on CockroachDB.
 */
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { parseDsn } from './dsn.ts';

export type Engine = 'postgres' | 'cockroach';

export class EngineError extends Error {
  override name = 'EngineError';
}

/** Names the engine of a Kysely instance and of the transactions opened on it; changes nothing. */
export class EngineTag implements KyselyPlugin {
  readonly engine: Engine;
  constructor(engine: Engine) {
    this.engine = engine;
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

const bound = new WeakMap<object, Engine>();

/** Records the engine of a handle that is not a Kysely instance (a pg pool). */
export function bindEngine<T extends object>(handle: T, engine: Engine): T {
  bound.set(handle, engine);
  return handle;
}

interface HasExecutor {
  getExecutor(): { plugins: readonly KyselyPlugin[] };
}

/** The engine of a Kysely instance or transaction (its EngineTag), or of a bound pool; PostgreSQL otherwise. */
export function engineOf(handle: object | undefined): Engine {
  if (!handle) return 'postgres';
  const b = bound.get(handle);
  if (b) return b;
  if (typeof (handle as Partial<HasExecutor>).getExecutor === 'function') {
    for (const p of (handle as HasExecutor).getExecutor().plugins) if (p instanceof EngineTag) return p.engine;
  }
  return 'postgres';
}

/**
 * Serialization-retry policy of `withTx` (p-retry options). CockroachDB runs every transaction
 * SERIALIZABLE and reports 40001 ("restart transaction") far more often than PostgreSQL, also
 * without real contention (clock uncertainty, a pushed timestamp), so it gets more attempts and a
 * longer jittered backoff; each attempt stays bounded. CockroachDB's guidance: retry the whole
 * transaction on 40001 with exponential backoff
 * (https://www.cockroachlabs.com/docs/stable/transaction-retry-error-reference).
 */
export interface RetryPolicy {
  retries: number;
  minTimeout: number;
  maxTimeout: number;
  factor: number;
}

export const RETRY_POLICY: Readonly<Record<Engine, RetryPolicy>> = {
  postgres: { retries: 8, minTimeout: 5, maxTimeout: 150, factor: 2 },
  cockroach: { retries: 15, minTimeout: 10, maxTimeout: 1_000, factor: 2 },
};

/**
 * Start-up rule: with CockroachDB for the data, the job queue must be on PostgreSQL
 * (graphile-worker uses LISTEN/NOTIFY, advisory locks and plpgsql functions, none of which
 * CockroachDB has). `queueDsn` is the value of `queue.dsn` (empty: the queue would share `dsn`).
 */
export function assertQueueEngine(dsn: string, queueDsn: string): void {
  if (parseDsn(dsn).kind !== 'cockroach') return;
  const q = queueDsn.trim();
  if (!q) {
    throw new EngineError(
      'dsn is CockroachDB (cockroach://), which cannot hold the job queue: set queue.dsn (QUEUE_DSN) to a postgres:// DSN of a PostgreSQL database for the queue',
    );
  }
  let kind: string;
  try {
    kind = parseDsn(q).kind;
  } catch {
    throw new EngineError('queue.dsn: expected a postgres:// DSN (the job queue runs only on PostgreSQL)');
  }
  if (kind !== 'postgres') {
    throw new EngineError(
      `queue.dsn is ${kind === 'memory' ? 'memory' : 'CockroachDB'}: with dsn on CockroachDB the job queue needs a postgres:// DSN of a PostgreSQL database (graphile-worker runs only on PostgreSQL)`,
    );
  }
}
