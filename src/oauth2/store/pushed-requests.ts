import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';
/** Pushed authorization requests (`oauth2_pushed_requests`, RFC 9126). */

export interface PushedRequestRow {
  signature: string;
  clientId: string;
  /** As stored (JSON, or sealed). */
  params: string;
  expiresAt: Date;
}

export async function insertPushedRequest(db: Executor, r: PushedRequestRow): Promise<void> {
  await db
    .insertInto('oauth2_pushed_requests')
    .values({
      nid: DEFAULT_NID,
      signature: r.signature,
      client_id: r.clientId,
      params: r.params,
      expires_at: r.expiresAt,
    })
    .execute();
}

/**
 * The first use of a handle, which starts a flow: marks it used and keeps it until `keepUntil` (the
 * flow's end) in one statement, so that of two concurrent first uses one wins. Undefined when the
 * handle is unknown, expired, already used, or another client's.
 */
export async function claimPushedRequest(
  db: Executor,
  o: { signature: string; clientId: string; now: Date; keepUntil: Date },
): Promise<string | undefined> {
  const row = await db
    .updateTable('oauth2_pushed_requests')
    .set({ used_at: o.now, expires_at: o.keepUntil })
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', o.signature)
    .where('client_id', '=', o.clientId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', o.now)
    .returning('params')
    .executeTakeFirst();
  return row?.params;
}

/** A handle whose flow has started, read again by that flow's later steps while it lasts. */
export async function findStartedPushedRequest(
  db: Executor,
  o: { signature: string; clientId: string; now: Date },
): Promise<string | undefined> {
  const row = await db
    .selectFrom('oauth2_pushed_requests')
    .select('params')
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', o.signature)
    .where('client_id', '=', o.clientId)
    .where('used_at', 'is not', null)
    .where('expires_at', '>', o.now)
    .executeTakeFirst();
  return row?.params;
}
