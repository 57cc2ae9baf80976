/** Login sessions (`oauth2_login_sessions`). */
import type { Executor } from '../../core/db/tx.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID } from '../../core/db/schema.ts';

export interface LoginSession {
  id: string;
  subject: string;
  authenticatedAt: Date;
  remember: boolean;
  expiresAt: Date;
  identityProviderSessionId: string;
}

type Row = {
  id: string;
  subject: string;
  authenticated_at: Date;
  remember: boolean;
  expires_at: Date;
  identity_provider_session_id: string;
};

const toSession = (r: Row): LoginSession => ({
  id: r.id,
  subject: r.subject,
  authenticatedAt: r.authenticated_at,
  remember: r.remember,
  expiresAt: r.expires_at,
  identityProviderSessionId: r.identity_provider_session_id,
});

/** A remembered, unexpired session by id. */
export async function findRememberedLoginSession(db: Executor, id: string, now: Date) {
  const r = await db
    .selectFrom('oauth2_login_sessions')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .where('remember', '=', true)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return r ? toSession(r) : undefined;
}

/** Creates or refreshes a session (Hydra's ConfirmLoginSession upsert). */
export async function upsertLoginSession(db: Executor, s: LoginSession): Promise<void> {
  const values = {
    authenticated_at: s.authenticatedAt,
    subject: s.subject,
    remember: s.remember,
    identity_provider_session_id: s.identityProviderSessionId,
    expires_at: s.expiresAt,
  };
  await db
    .insertInto('oauth2_login_sessions')
    .values({ nid: DEFAULT_NID, id: s.id, ...values })
    .onConflict((oc) => oc.columns(['nid', 'id']).doUpdateSet(values))
    .execute();
}

export async function deleteLoginSession(db: Executor, id: string): Promise<LoginSession | undefined> {
  const r = await db
    .deleteFrom('oauth2_login_sessions')
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return r ? toSession(r) : undefined;
}

/** How many login sessions a subject has (the CLI's progress total). */
export async function countLoginSessions(db: Executor, subject: string): Promise<number> {
  const r = await db
    .selectFrom('oauth2_login_sessions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('nid', '=', DEFAULT_NID)
    .where('subject', '=', subject)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

/**
 * Deletes at most `limit` login sessions of a subject (one bounded statement: the caller's
 * transaction stays small however many sessions the subject has) and returns their ids.
 */
export async function deleteLoginSessionBatch(db: Executor, subject: string, limit: number): Promise<string[]> {
  const rows = await db
    .deleteFrom('oauth2_login_sessions')
    .where('nid', '=', DEFAULT_NID)
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('oauth2_login_sessions')
        .select('id')
        .where('nid', '=', DEFAULT_NID)
        .where('subject', '=', subject)
        .limit(limit),
    )
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}
