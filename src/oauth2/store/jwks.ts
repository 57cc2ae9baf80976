/**
 * JSON Web Key rows (table `jwk_keys`). Rows hold sealed key data only; sealing and opening happen
 * in the jwk service. Within a set, rows come newest first (highest id first).
 */
import { mapDbError } from '../../core/db/errors.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';

export interface JwkRow {
  id: number;
  sid: string;
  kid: string;
  keydata: string;
  created_at: Date;
}

export interface NewJwkRow {
  sid: string;
  kid: string;
  keydata: string;
  created_at: Date;
}

/** Every key of a set, newest first. An unknown set gives an empty list. */
export async function listKeys(db: Executor, sid: string): Promise<JwkRow[]> {
  return db
    .selectFrom('jwk_keys')
    .select(['id', 'sid', 'kid', 'keydata', 'created_at'])
    .where('nid', '=', DEFAULT_NID)
    .where('sid', '=', sid)
    .orderBy('id', 'desc')
    .execute();
}

export async function findKey(db: Executor, sid: string, kid: string): Promise<JwkRow | undefined> {
  return db
    .selectFrom('jwk_keys')
    .select(['id', 'sid', 'kid', 'keydata', 'created_at'])
    .where('nid', '=', DEFAULT_NID)
    .where('sid', '=', sid)
    .where('kid', '=', kid)
    .executeTakeFirst();
}

/** Inserts rows in the given order (the last one becomes the newest). A duplicate kid in a set → 409. */
export async function insertKeys(db: Executor, rows: NewJwkRow[]): Promise<void> {
  if (!rows.length) return;
  try {
    // One statement per row: a multi-row VALUES list does not promise the order of the serial ids.
    for (const r of rows)
      await db
        .insertInto('jwk_keys')
        .values({ nid: DEFAULT_NID, ...r })
        .execute();
  } catch (e) {
    throw mapDbError(e);
  }
}

/** Deletes one key; returns how many rows went (0 or 1). */
export async function deleteKey(db: Executor, sid: string, kid: string): Promise<number> {
  const r = await db
    .deleteFrom('jwk_keys')
    .where('nid', '=', DEFAULT_NID)
    .where('sid', '=', sid)
    .where('kid', '=', kid)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes a whole set; returns how many keys went. */
export async function deleteSet(db: Executor, sid: string): Promise<number> {
  const r = await db.deleteFrom('jwk_keys').where('nid', '=', DEFAULT_NID).where('sid', '=', sid).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Takes the generation lock of a set for the rest of the transaction. The insert waits for any
 * other transaction that is inserting the same row; the FOR UPDATE then waits for whoever holds
 * the lock. Once it returns, a re-read of the set sees everything the previous holder committed
 * (READ COMMITTED takes a new snapshot per statement).
 */
export async function lockSetForGeneration(db: Executor, sid: string): Promise<void> {
  await db
    .insertInto('jwk_set_locks')
    .values({ nid: DEFAULT_NID, sid })
    .onConflict((oc) => oc.columns(['nid', 'sid']).doNothing())
    .execute();
  await db
    .selectFrom('jwk_set_locks')
    .select('sid')
    .where('nid', '=', DEFAULT_NID)
    .where('sid', '=', sid)
    .forUpdate()
    .execute();
}

/** The names of the sets that hold keys, with their key counts (the operator console's list). */
export async function listSets(db: Executor): Promise<{ sid: string; keys: number }[]> {
  const rows = await db
    .selectFrom('jwk_keys')
    .select(['sid', (eb) => eb.fn.countAll<string>().as('n')])
    .where('nid', '=', DEFAULT_NID)
    .groupBy('sid')
    .orderBy('sid')
    .execute();
  return rows.map((r) => ({ sid: r.sid, keys: Number(r.n) }));
}
