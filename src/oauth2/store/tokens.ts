/**
 * Authorization codes, access and refresh tokens (keyed by the token's HMAC signature) and the
 * `jti` blacklist. Rows of one grant family share `request_id`.
 */

import { sql } from 'kysely';
import type { ChangeFeed } from '../../core/db/changes.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor } from '../tables.ts';
import { insertFrom, insertValues } from './one-statement.ts';

export interface TokenRecord {
  signature: string;
  requestId: string;
  clientId: string;
  subject: string;
  requestedScope: string[];
  grantedScope: string[];
  requestedAudience: string[];
  grantedAudience: string[];
  requestedAt: Date;
  expiresAt: Date | null;
  /** Sealed grant session (see session-data.ts). */
  sessionData: string;
}

export interface CodeRecord extends TokenRecord {
  expiresAt: Date;
  redirectUri: string;
  codeChallenge: string;
  codeChallengeMethod: string;
  active: boolean;
}

export interface RefreshRecord extends TokenRecord {
  accessTokenSignature: string;
  active: boolean;
  firstUsedAt: Date | null;
  usedTimes: number;
}

/**
 * Where a statement that deletes (or may delete) access tokens is announced as it starts: the
 * process's change feed (`bump('token')`), whose `token` version the cache of introspected tokens
 * (token/lookup.ts) compares, so that it drops what it holds before even the notification of the
 * commit arrives. Every deleting function of the store takes it, so none can forget; undefined
 * where no cache can be (a process without a feed).
 */
export type TokenChanges = Pick<ChangeFeed, 'bump'> | undefined;
export const announceRevocation = (changes: TokenChanges): void => changes?.bump('token');

const base = (t: TokenRecord) => ({
  nid: DEFAULT_NID,
  signature: t.signature,
  request_id: t.requestId,
  client_id: t.clientId,
  subject: t.subject,
  requested_scope: JSON.stringify(t.requestedScope),
  granted_scope: JSON.stringify(t.grantedScope),
  requested_audience: JSON.stringify(t.requestedAudience),
  granted_audience: JSON.stringify(t.grantedAudience),
  requested_at: t.requestedAt,
  session_data: t.sessionData,
});

type BaseRow = {
  signature: string;
  request_id: string;
  client_id: string;
  subject: string;
  requested_scope: string[];
  granted_scope: string[];
  requested_audience: string[];
  granted_audience: string[];
  requested_at: Date;
  expires_at: Date | null;
  session_data: string;
};

/** The fields every token-like row shares (codes, tokens, device requests). */
export const fromRow = (r: BaseRow): TokenRecord => ({
  signature: r.signature,
  requestId: r.request_id,
  clientId: r.client_id,
  subject: r.subject,
  requestedScope: r.requested_scope,
  grantedScope: r.granted_scope,
  requestedAudience: r.requested_audience,
  grantedAudience: r.granted_audience,
  requestedAt: r.requested_at,
  expiresAt: r.expires_at,
  sessionData: r.session_data,
});

/** The column values of a code row. */
export const codeValues = (c: Omit<CodeRecord, 'active'>) => ({
  ...base(c),
  expires_at: c.expiresAt,
  redirect_uri: c.redirectUri,
  code_challenge: c.codeChallenge,
  code_challenge_method: c.codeChallengeMethod,
});

export async function insertCode(db: Executor, c: Omit<CodeRecord, 'active'>): Promise<void> {
  await db.insertInto('oauth2_authorization_codes').values(codeValues(c)).execute();
}

export async function findCode(db: Executor, signature: string): Promise<CodeRecord | undefined> {
  const r = await db
    .selectFrom('oauth2_authorization_codes')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .executeTakeFirst();
  if (!r) return undefined;
  return {
    ...fromRow(r),
    expiresAt: r.expires_at,
    redirectUri: r.redirect_uri,
    codeChallenge: r.code_challenge,
    codeChallengeMethod: r.code_challenge_method,
    active: r.active,
  };
}

export type AccessRecord = TokenRecord & { expiresAt: Date };
export type NewRefreshRecord = TokenRecord & { accessTokenSignature: string };
const accessValues = (t: AccessRecord) => ({ ...base(t), expires_at: t.expiresAt });
const refreshValues = (t: NewRefreshRecord) => ({
  ...base(t),
  expires_at: t.expiresAt,
  access_token_signature: t.accessTokenSignature,
});

export async function insertAccessToken(db: Executor, t: AccessRecord): Promise<void> {
  await db.insertInto('oauth2_access_tokens').values(accessValues(t)).execute();
}

/**
 * A one-time credential that a grant spends to get its tokens: an authorization code (active →
 * inactive) or a device request (accepted → issued). It can be spent once.
 */
export interface OneTime {
  kind: 'code' | 'device';
  signature: string;
}

const spendOf = (s: OneTime) =>
  s.kind === 'code'
    ? sql`update oauth2_authorization_codes set active = false
      where nid = ${DEFAULT_NID} and signature = ${s.signature} and active returning 1`
    : sql`update oauth2_device_requests set state = 'issued'
      where nid = ${DEFAULT_NID} and signature = ${s.signature} and state = 'accepted' returning 1`;

/**
 * A code exchange's or device grant's writes in one statement: spends the credential and, only if
 * this call spent it, inserts the access and refresh token rows. False when it was spent already
 * (used before, or by a concurrent request that won): then nothing was written.
 */
export async function spendIssuing(
  db: Executor,
  spent: OneTime,
  access: AccessRecord | undefined,
  refresh: NewRefreshRecord | undefined,
): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`with c as (${spendOf(spent)})${
    access ? sql`, a as (${insertFrom('oauth2_access_tokens', accessValues(access), 'c')})` : sql``
  }${refresh ? sql`, r as (${insertFrom('oauth2_refresh_tokens', refreshValues(refresh), 'c')})` : sql``}
    select count(*)::int as n from c`.execute(db);
  return rows[0]?.n === 1;
}

/** The token rows of one issuance (either may be absent), in one statement. */
export async function insertTokens(
  db: Executor,
  access: AccessRecord | undefined,
  refresh: NewRefreshRecord | undefined,
): Promise<void> {
  if (access && refresh) {
    await sql`with a as (${insertValues('oauth2_access_tokens', accessValues(access))})
      ${insertValues('oauth2_refresh_tokens', refreshValues(refresh))}`.execute(db);
  } else if (access) await insertAccessToken(db, access);
  else if (refresh) await insertRefreshToken(db, refresh);
}

/** Several access-token rows in one statement (one commit); all or none. */
export async function insertAccessTokens(
  db: Executor,
  ts: ReadonlyArray<TokenRecord & { expiresAt: Date }>,
): Promise<void> {
  if (!ts.length) return;
  await db
    .insertInto('oauth2_access_tokens')
    .values(ts.map((t) => ({ ...base(t), expires_at: t.expiresAt })))
    .execute();
}

export async function findAccessToken(db: Executor, signature: string): Promise<TokenRecord | undefined> {
  const r = await db
    .selectFrom('oauth2_access_tokens')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .executeTakeFirst();
  return r ? fromRow(r) : undefined;
}

export async function insertRefreshToken(db: Executor, t: NewRefreshRecord): Promise<void> {
  await db.insertInto('oauth2_refresh_tokens').values(refreshValues(t)).execute();
}

type RefreshRow = BaseRow & {
  access_token_signature: string;
  active: boolean;
  first_used_at: Date | null;
  used_times: number | null;
};

/** A refresh token row; a NULL used-times count (never stored) reads as 0. */
export const refreshFromRow = (r: RefreshRow): RefreshRecord => ({
  ...fromRow(r),
  accessTokenSignature: r.access_token_signature,
  active: r.active,
  firstUsedAt: r.first_used_at,
  usedTimes: r.used_times ?? 0,
});

export async function findRefreshToken(db: Executor, signature: string): Promise<RefreshRecord | undefined> {
  const r = await db
    .selectFrom('oauth2_refresh_tokens')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .executeTakeFirst();
  return r ? refreshFromRow(r) : undefined;
}

/** Deletes every access and refresh token (and unused code) of the given grant families. */
export async function deleteTokensOfRequests(
  db: Executor,
  requestIds: readonly string[],
  changes: TokenChanges,
): Promise<void> {
  if (!requestIds.length) return;
  const ids = [...requestIds];
  announceRevocation(changes);
  await db.deleteFrom('oauth2_access_tokens').where('nid', '=', DEFAULT_NID).where('request_id', 'in', ids).execute();
  await db.deleteFrom('oauth2_refresh_tokens').where('nid', '=', DEFAULT_NID).where('request_id', 'in', ids).execute();
  await db
    .deleteFrom('oauth2_authorization_codes')
    .where('nid', '=', DEFAULT_NID)
    .where('request_id', 'in', ids)
    .where('active', '=', true)
    .execute();
}

/**
 * Records a `jti` (by its hash) until `expiresAt`; false when it is already known and unexpired.
 * An expired entry is taken over, so a jti is refused only while its assertion could be valid.
 */
export async function insertJti(db: Executor, signature: string, expiresAt: Date, now: Date): Promise<boolean> {
  const r = await db
    .insertInto('oauth2_jti_blacklist')
    .values({ nid: DEFAULT_NID, signature, expires_at: expiresAt })
    .onConflict((oc) =>
      oc
        .columns(['nid', 'signature'])
        .doUpdateSet({ expires_at: expiresAt })
        .where(sql.ref('oauth2_jti_blacklist.expires_at'), '<', now),
    )
    .returning('signature')
    .executeTakeFirst();
  return r !== undefined;
}

export interface JtiRow {
  signature: string;
  expiresAt: Date;
  now: Date;
}

/**
 * `insertJti` for several jtis in one statement, the answers in the order of `rows`. A jti given
 * twice is recorded once and its later copies are refused. An expired entry is taken over as of the
 * earliest `now` of the rows: a takeover judged a few milliseconds early refuses a jti, never
 * accepts a replay.
 */
export async function insertJtis(db: Executor, rows: readonly JtiRow[]): Promise<boolean[]> {
  const first = new Map<string, number>();
  rows.forEach((r, i) => {
    if (!first.has(r.signature)) first.set(r.signature, i);
  });
  const unique = [...first.values()].map((i) => rows[i] as JtiRow);
  const now = new Date(Math.min(...rows.map((r) => r.now.getTime())));
  const inserted = await db
    .insertInto('oauth2_jti_blacklist')
    .values(unique.map((r) => ({ nid: DEFAULT_NID, signature: r.signature, expires_at: r.expiresAt })))
    .onConflict((oc) =>
      oc
        .columns(['nid', 'signature'])
        .doUpdateSet((eb) => ({ expires_at: eb.ref('excluded.expires_at') }))
        .where(sql.ref('oauth2_jti_blacklist.expires_at'), '<', now),
    )
    .returning('signature')
    .execute();
  const recorded = new Set(inserted.map((r) => r.signature));
  return rows.map((r, i) => first.get(r.signature) === i && recorded.has(r.signature));
}

/**
 * Access-token rows, each issued on a proof whose `jti` must be used once (a DPoP proof, RFC 9449
 * §11.1), in ONE statement: the jtis are recorded as `insertJtis` records them, and a token row is
 * inserted only with a jti this statement recorded; true for the rows stored. A refused jti (known
 * and unexpired, or a later copy of one in `rows`) leaves no token row, and both kinds of row
 * commit together or not at all. The columns go as one array each (`unnest`), so the statement's
 * text and its parameters are the same for one row as for two hundred.
 */
export async function insertAccessTokensWithJtis(
  db: Executor,
  rows: ReadonlyArray<{ token: AccessRecord; jti: JtiRow }>,
): Promise<boolean[]> {
  const first = new Map<string, number>();
  rows.forEach((r, i) => {
    if (!first.has(r.jti.signature)) first.set(r.jti.signature, i);
  });
  const unique = [...first.values()].map((i) => rows[i] as { token: AccessRecord; jti: JtiRow });
  let now = Number.POSITIVE_INFINITY;
  for (const r of rows) now = Math.min(now, r.jti.now.getTime());
  const col = <T>(f: (t: AccessRecord) => T) => unique.map((r) => f(r.token));
  const { rows: recorded } = await sql<{ signature: string }>`with j as (
    insert into oauth2_jti_blacklist (nid, signature, expires_at)
    select ${DEFAULT_NID}::uuid, s, e
      from unnest(${unique.map((r) => r.jti.signature)}::text[], ${unique.map((r) => r.jti.expiresAt)}::timestamptz[]) as v(s, e)
    on conflict (nid, signature) do update set expires_at = excluded.expires_at
      where oauth2_jti_blacklist.expires_at < ${new Date(now)}
    returning signature
  ), a as (
    insert into oauth2_access_tokens (nid, signature, request_id, client_id, subject, requested_scope,
      granted_scope, requested_audience, granted_audience, requested_at, expires_at, session_data)
    select ${DEFAULT_NID}::uuid, v.signature, v.request_id, v.client_id, v.subject, v.requested_scope,
      v.granted_scope, v.requested_audience, v.granted_audience, v.requested_at, v.expires_at, v.session_data
      from unnest(${unique.map((r) => r.jti.signature)}::text[], ${col((t) => t.signature)}::text[],
        ${col((t) => t.requestId)}::text[], ${col((t) => t.clientId)}::text[], ${col((t) => t.subject)}::text[],
        ${col((t) => JSON.stringify(t.requestedScope))}::jsonb[], ${col((t) => JSON.stringify(t.grantedScope))}::jsonb[],
        ${col((t) => JSON.stringify(t.requestedAudience))}::jsonb[],
        ${col((t) => JSON.stringify(t.grantedAudience))}::jsonb[], ${col((t) => t.requestedAt)}::timestamptz[],
        ${col((t) => t.expiresAt)}::timestamptz[], ${col((t) => t.sessionData)}::text[])
        as v(jti, signature, request_id, client_id, subject, requested_scope, granted_scope, requested_audience,
          granted_audience, requested_at, expires_at, session_data)
      where v.jti in (select signature from j)
  )
  select signature from j`.execute(db);
  const stored = new Set(recorded.map((r) => r.signature));
  return rows.map((r, i) => first.get(r.jti.signature) === i && stored.has(r.jti.signature));
}

/** True while a `jti` (by its hash) is recorded and unexpired. */
export async function isJtiKnown(db: Executor, signature: string, now: Date): Promise<boolean> {
  const r = await db
    .selectFrom('oauth2_jti_blacklist')
    .select('signature')
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .where('expires_at', '>=', now)
    .executeTakeFirst();
  return r !== undefined;
}

/**
 * Deletes the access and refresh tokens of a subject (optionally for one client). Consent revocation
 * uses it so that tokens of discarded (skipped) consents go too; the (nid, subject, client_id)
 * indexes keep it cheap.
 */
export async function deleteTokensOfSubject(
  db: Executor,
  changes: TokenChanges,
  subject: string,
  clientId?: string,
): Promise<void> {
  announceRevocation(changes);
  for (const table of ['oauth2_access_tokens', 'oauth2_refresh_tokens'] as const) {
    let q = db.deleteFrom(table).where('nid', '=', DEFAULT_NID).where('subject', '=', subject);
    if (clientId !== undefined) q = q.where('client_id', '=', clientId);
    await q.execute();
  }
}
