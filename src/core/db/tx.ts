/**
 * Transactions with serialization retry. The whole transaction body is re-run
 * when PostgreSQL (or CockroachDB) reports a serialization failure (40001) or a deadlock (40P01);
 * attempts are bounded and jittered, and the error surfaces only when they run out.
 */
import type { Kysely, Transaction } from 'kysely';
import pRetry from 'p-retry';
import { engineOf, RETRY_POLICY } from './engine.ts';
import type { CoreDatabase } from './schema.ts';

/**
 * A handle or a transaction. `DB` is the tables the code that holds it sees: the core's by default;
 * a domain's view (`src/<domain>/tables.ts`) adds its own. A handle of more tables is one of
 * fewer: the composition root's whole `Database` is passed as is.
 */
export type Executor<DB = CoreDatabase> = Kysely<DB> | Transaction<DB>;
/** The database handle services hold (they open transactions on it with `withTx`). */
export type Db<DB = CoreDatabase> = Kysely<DB>;
export type Isolation = 'serializable' | 'repeatable read' | 'read committed';

const RETRYABLE = new Set(['40001', '40P01']);

export const isRetryableTxError = (e: unknown): boolean =>
  typeof e === 'object' && e !== null && RETRYABLE.has((e as { code?: string }).code ?? '');

export interface TxOptions {
  isolation?: Isolation;
  /** Re-runs after the first attempt (default: the engine's, see RETRY_POLICY in engine.ts). */
  retries?: number;
  onRetry?: (attempt: number, error: unknown) => void;
}

export async function withTx<DB, T>(
  db: Kysely<DB>,
  fn: (trx: Transaction<DB>) => Promise<T>,
  opts: TxOptions = {},
): Promise<T> {
  const run = () => {
    let b = db.transaction();
    if (opts.isolation) b = b.setIsolationLevel(opts.isolation);
    return b.execute(fn);
  };
  return retried(db, run, opts);
}

/**
 * Runs `fn` with withTx's retry on a serialization failure or deadlock, for work that is its own
 * transaction without BEGIN/COMMIT: one statement (e.g. a server-side function doing a whole write).
 */
export function retried<DB, T>(db: Kysely<DB>, fn: () => Promise<T>, opts: TxOptions = {}): Promise<T> {
  const policy = RETRY_POLICY[engineOf(db)];
  return pRetry(fn, {
    retries: opts.retries ?? policy.retries,
    minTimeout: policy.minTimeout,
    maxTimeout: policy.maxTimeout,
    factor: policy.factor,
    randomize: true,
    shouldRetry: ({ error }) => isRetryableTxError(error),
    onFailedAttempt: ({ error, attemptNumber }) => {
      if (isRetryableTxError(error)) opts.onRetry?.(attemptNumber, error);
    },
  });
}
