/**
 * Trusted JWT-bearer issuers (`oauth2_trusted_jwt_bearer_issuers`) and the lookup of their keys
 * (`jwk_keys`, set = issuer) for RFC 7523 assertions. Key data stays sealed here; the trust
 * service opens it.
 */
import type { Selectable } from 'kysely';
import { mapDbError } from '../../core/db/errors.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor, type TrustedJwtBearerIssuersTable } from '../tables.ts';
import type { JwkRow } from './jwks.ts';

export interface TrustedIssuer {
  id: string;
  issuer: string;
  subject: string;
  allowAnySubject: boolean;
  scope: string[];
  keySet: string;
  keyId: string;
  createdAt: Date;
  expiresAt: Date;
}

type Row = Omit<Selectable<TrustedJwtBearerIssuersTable>, 'nid'>;

const COLUMNS = [
  'id',
  'issuer',
  'subject',
  'allow_any_subject',
  'scope',
  'key_set',
  'key_id',
  'created_at',
  'expires_at',
] as const;

const toIssuer = (r: Row): TrustedIssuer => ({
  id: r.id,
  issuer: r.issuer,
  subject: r.subject,
  allowAnySubject: r.allow_any_subject,
  scope: r.scope,
  keySet: r.key_set,
  keyId: r.key_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

/** A duplicate (issuer, subject, kid) is a 409. */
export async function insertTrustedIssuer(db: Executor, t: TrustedIssuer): Promise<void> {
  try {
    await db
      .insertInto('oauth2_trusted_jwt_bearer_issuers')
      .values({
        id: t.id,
        nid: DEFAULT_NID,
        issuer: t.issuer,
        subject: t.subject,
        allow_any_subject: t.allowAnySubject,
        scope: JSON.stringify(t.scope),
        key_set: t.keySet,
        key_id: t.keyId,
        created_at: t.createdAt,
        expires_at: t.expiresAt,
      })
      .execute();
  } catch (e) {
    throw mapDbError(e);
  }
}

export async function findTrustedIssuer(db: Executor, id: string): Promise<TrustedIssuer | undefined> {
  const r = await db
    .selectFrom('oauth2_trusted_jwt_bearer_issuers')
    .select(COLUMNS)
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .executeTakeFirst();
  return r ? toIssuer(r) : undefined;
}

/** One keyset page ordered by id, optionally for one issuer. */
export async function listTrustedIssuers(
  db: Executor,
  q: { issuer?: string | undefined; afterId?: string | undefined; limit: number },
): Promise<TrustedIssuer[]> {
  let query = db
    .selectFrom('oauth2_trusted_jwt_bearer_issuers')
    .select(COLUMNS)
    .where('nid', '=', DEFAULT_NID)
    .orderBy('id')
    .limit(q.limit);
  if (q.issuer) query = query.where('issuer', '=', q.issuer);
  if (q.afterId) query = query.where('id', '>', q.afterId);
  return (await query.execute()).map(toIssuer);
}

export async function deleteTrustedIssuer(db: Executor, id: string): Promise<TrustedIssuer | undefined> {
  const r = await db
    .deleteFrom('oauth2_trusted_jwt_bearer_issuers')
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirst();
  return r ? toIssuer(r) : undefined;
}

/** How many trust relationships use a stored key. */
export async function countIssuersOfKey(db: Executor, keySet: string, keyId: string): Promise<number> {
  const r = await db
    .selectFrom('oauth2_trusted_jwt_bearer_issuers')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('nid', '=', DEFAULT_NID)
    .where('key_set', '=', keySet)
    .where('key_id', '=', keyId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export interface TrustKeyRow {
  issuer: TrustedIssuer;
  key: JwkRow;
}

/**
 * Unexpired trust relationships of (iss, sub) — `sub` matching or `allow_any_subject` — with their
 * sealed keys, newest first, at most 100; only the one key `kid` when given. Relationships naming
 * the subject come before any-subject ones.
 */
export async function findTrustKeys(
  db: Executor,
  q: { issuer: string; subject: string; kid: string | undefined; now: Date },
): Promise<TrustKeyRow[]> {
  let query = db
    .selectFrom('oauth2_trusted_jwt_bearer_issuers as t')
    .innerJoin('jwk_keys as k', (j) =>
      j.onRef('k.nid', '=', 't.nid').onRef('k.sid', '=', 't.key_set').onRef('k.kid', '=', 't.key_id'),
    )
    .select([
      't.id',
      't.issuer',
      't.subject',
      't.allow_any_subject',
      't.scope',
      't.key_set',
      't.key_id',
      't.created_at',
      't.expires_at',
      'k.id as key_row_id',
      'k.keydata',
      'k.created_at as key_created_at',
    ])
    .where('t.nid', '=', DEFAULT_NID)
    .where('t.issuer', '=', q.issuer)
    .where('t.expires_at', '>', q.now)
    .where((eb) => eb.or([eb('t.subject', '=', q.subject), eb('t.allow_any_subject', '=', true)]))
    .orderBy('t.allow_any_subject')
    .orderBy('t.created_at', 'desc')
    .limit(100);
  if (q.kid !== undefined) query = query.where('t.key_id', '=', q.kid);
  const rows = await query.execute();
  return rows.map((r) => ({
    issuer: toIssuer(r),
    key: { id: r.key_row_id, sid: r.key_set, kid: r.key_id, keydata: r.keydata, created_at: r.key_created_at },
  }));
}
