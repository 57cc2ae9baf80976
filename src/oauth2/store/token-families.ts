/**
 * Refresh-token rotation and token deletion by grant family or client (Hydra's persister_oauth2
 * RotateRefreshToken / RevokeAccessToken / DeleteAccessTokens). Rows of one grant share
 * `request_id`.
 */
import { sql } from 'kysely';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';
import { announceRevocation, type RefreshRecord, refreshFromRow, type TokenChanges } from './tokens.ts';

/**
 * Reads a refresh token and locks its row for the rest of the transaction (`FOR UPDATE`), so
 * concurrent refreshes of one token run one after the other and each sees the previous one's
 * commit (under READ COMMITTED the locked row is re-read after the wait; a deleted row is gone).
 */
export async function lockRefreshToken(db: Executor, signature: string): Promise<RefreshRecord | undefined> {
  const r = await db
    .selectFrom('oauth2_refresh_tokens')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .forUpdate()
    .executeTakeFirst();
  return r ? refreshFromRow(r) : undefined;
}

/**
 * Marks a refresh token used: inactive, `first_used_at` set once (so the grace period is never
 * renewed), `used_times` counted up from its stored value, NULL counting as 0.
 */
export async function markRefreshTokenUsed(db: Executor, signature: string, now: Date): Promise<void> {
  await db
    .updateTable('oauth2_refresh_tokens')
    .set({
      active: false,
      first_used_at: sql<Date>`COALESCE(first_used_at, ${now})`,
      used_times: sql<number>`COALESCE(used_times, 0) + 1`,
    })
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .execute();
}

/** Strict rotation: every still-active refresh token of the grant becomes inactive. */
export async function deactivateRefreshTokensOfRequest(db: Executor, requestId: string): Promise<void> {
  await db
    .updateTable('oauth2_refresh_tokens')
    .set({ active: false })
    .where('nid', '=', DEFAULT_NID)
    .where('request_id', '=', requestId)
    .where('active', '=', true)
    .execute();
}

export async function deleteAccessToken(db: Executor, signature: string, changes: TokenChanges): Promise<number> {
  announceRevocation(changes);
  const r = await db
    .deleteFrom('oauth2_access_tokens')
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function deleteAccessTokensOfRequest(
  db: Executor,
  requestId: string,
  changes: TokenChanges,
): Promise<void> {
  announceRevocation(changes);
  await db
    .deleteFrom('oauth2_access_tokens')
    .where('nid', '=', DEFAULT_NID)
    .where('request_id', '=', requestId)
    .execute();
}

/** `DELETE /admin/oauth2/tokens?client_id=`: the client's access tokens (refresh tokens stay, as in Hydra). */
export async function deleteAccessTokensOfClient(
  db: Executor,
  clientId: string,
  changes: TokenChanges,
): Promise<number> {
  announceRevocation(changes);
  const r = await db
    .deleteFrom('oauth2_access_tokens')
    .where('nid', '=', DEFAULT_NID)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Every access token, refresh token and authorization code of a client (the client is deleted). */
export async function deleteTokensOfClient(db: Executor, clientId: string, changes: TokenChanges): Promise<void> {
  announceRevocation(changes);
  for (const table of ['oauth2_access_tokens', 'oauth2_refresh_tokens', 'oauth2_authorization_codes'] as const) {
    await db.deleteFrom(table).where('nid', '=', DEFAULT_NID).where('client_id', '=', clientId).execute();
  }
}
