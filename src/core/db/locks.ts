/**
 * Named locks held until the end of the caller's transaction. On PostgreSQL: transaction-level
 * advisory locks. On CockroachDB, which has no advisory locks: the rows of `gatehouse_locks`
 * (sql/0210_gatehouse_locks.sql, 16384 rows made by the migration), one per bucket of a hash of
 * the lock name, locked by updating the row (the write intent blocks every other writer and
 * locking reader until commit or rollback). Names that share a bucket merely serialise each other.
 * No row is created while locking, so a waiting transaction never waits on another one's insert.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { engineOf } from './engine.ts';
import type { Executor } from './tx.ts';

const LOCK_BUCKETS = 16_384;

/** Bucket of a lock name on CockroachDB: 14 bits of its SHA-256. */
export const lockBucket = (name: string): number =>
  createHash('sha256').update(name).digest().readUInt16BE(0) % LOCK_BUCKETS;

/** The names as `lockNames` takes them on PostgreSQL: deduplicated, in one sorted order. */
export const lockOrder = (names: readonly string[]): string[] => [...new Set(names)].sort();

/** Blocks until every name is locked for the rest of the transaction; names are taken in one sorted order. */
export async function lockNames(db: Executor, names: readonly string[]): Promise<void> {
  const keys = lockOrder(names);
  if (!keys.length) return;
  if (engineOf(db) === 'postgres') {
    await sql`select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(${keys}::text[]) as k`.execute(db);
    return;
  }
  // One bucket at a time, in ascending order: two lockers of overlapping sets cannot deadlock.
  for (const bucket of [...new Set(keys.map(lockBucket))].sort((a, b) => a - b)) {
    await sql`update gatehouse_locks set taken = taken + 1 where bucket = ${bucket}`.execute(db);
  }
}

/** Locks `name` for the rest of the transaction if nobody holds it; false (at once) when someone does. */
export async function tryLockName(db: Executor, name: string): Promise<boolean> {
  if (engineOf(db) === 'postgres') {
    const { rows } = await sql<{
      ok: boolean;
    }>`select pg_try_advisory_xact_lock(hashtextextended(${name}, 0)) as ok`.execute(db);
    return rows[0]?.ok === true;
  }
  const bucket = lockBucket(name);
  const { rows } = await sql<{ bucket: number }>`
    select bucket from gatehouse_locks where bucket = ${bucket} for update skip locked`.execute(db);
  if (rows.length !== 1) return false;
  // From a row lock to a write intent, which every engine keeps until the transaction ends.
  await sql`update gatehouse_locks set taken = taken + 1 where bucket = ${bucket}`.execute(db);
  return true;
}
