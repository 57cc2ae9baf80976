/** Consent sessions stored as flow rows (`oauth2_flows`) and used consent ids (`oauth2_used_consents`). */
import { type Selectable, sql } from 'kysely';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type Executor, type FlowsTable } from '../tables.ts';
import { insertFrom } from './one-statement.ts';
import { type LoginSession, loginSessionValues } from './sessions.ts';

export interface ConsentFlow {
  consentRequestId: string;
  loginChallengeId: string;
  clientId: string;
  subject: string;
  loginSessionId: string;
  requestUrl: string;
  requestedScope: string[];
  requestedAudience: string[];
  requestedAt: Date;
  authenticatedAt: Date | null;
  oidcContext: Record<string, unknown>;
  acr: string;
  amr: string[];
  context: unknown;
  forceSubjectIdentifier: string;
  consentSkip: boolean;
  grantedScope: string[];
  grantedAudience: string[];
  remember: boolean;
  rememberFor: number;
  handledAt: Date;
  expiresAt: Date | null;
  /** Sealed `{access_token, id_token}` claims (see session-data.ts). */
  sessionData: string;
}

const toFlow = (r: Selectable<FlowsTable>): ConsentFlow => ({
  consentRequestId: r.consent_request_id,
  loginChallengeId: r.login_challenge_id,
  clientId: r.client_id,
  subject: r.subject,
  loginSessionId: r.login_session_id,
  requestUrl: r.request_url,
  requestedScope: r.requested_scope,
  requestedAudience: r.requested_audience,
  requestedAt: r.requested_at,
  authenticatedAt: r.authenticated_at,
  oidcContext: r.oidc_context,
  acr: r.acr,
  amr: r.amr,
  context: r.context,
  forceSubjectIdentifier: r.force_subject_identifier,
  consentSkip: r.consent_skip,
  grantedScope: r.granted_scope,
  grantedAudience: r.granted_audience,
  remember: r.remember,
  rememberFor: r.remember_for,
  handledAt: r.handled_at,
  expiresAt: r.expires_at,
  sessionData: r.session_data,
});

const json = (v: unknown) => JSON.stringify(v ?? null);

export interface LoginConfirmation {
  /** The login verifier's used-record (`login:<id>`) and when it may go. */
  verifier: { id: string; expiresAt: Date };
  /** The login session to create or refresh, only if the verifier was unused. */
  session?: LoginSession | undefined;
  /** Also read the newest remembered, unexpired, not itself skipped consent of this subject for this client. */
  consentOf?: { clientId: string; subject: string; now: Date } | undefined;
}

/**
 * The return from the login UI in ONE statement: records the use of the login verifier; only if
 * it was unused, creates or refreshes the login session (Hydra's ConfirmLoginSession upsert); and
 * reads the remembered consent's granted scope. `fresh` is false when the verifier was used before
 * (then nothing was written); `rememberedScope` is undefined when there is no remembered consent.
 */
export async function confirmLogin(
  db: Executor,
  c: LoginConfirmation,
): Promise<{ fresh: boolean; rememberedScope: string[] | undefined }> {
  const session = c.session ? loginSessionValues(c.session) : undefined;
  const q = c.consentOf;
  const { rows } = await sql<{ fresh: boolean; remembered: string[] | null }>`with v as (
      insert into oauth2_used_verifiers (nid, id, expires_at)
      values (${DEFAULT_NID}, ${c.verifier.id}, ${c.verifier.expiresAt})
      on conflict (nid, id) do nothing returning id
    )${
      session
        ? sql`, s as (${insertFrom('oauth2_login_sessions', { nid: DEFAULT_NID, id: c.session?.id, ...session }, 'v')}
            on conflict (nid, id) do update set ${sql.join(
              Object.keys(session).map((k) => sql`${sql.ref(k)} = excluded.${sql.ref(k)}`),
            )})`
        : sql``
    }
    select exists (select 1 from v) as fresh, ${
      q
        ? sql`(select granted_scope from oauth2_flows
            where nid = ${DEFAULT_NID} and subject = ${q.subject} and client_id = ${q.clientId}
              and consent_skip = false and remember = true and (expires_at is null or expires_at > ${q.now})
            order by requested_at desc limit 1)`
        : sql`null::jsonb`
    } as remembered`.execute(db);
  const r = rows[0];
  return { fresh: !!r?.fresh, rememberedScope: r?.remembered ?? undefined };
}

const consentFlowValues = (f: ConsentFlow) => ({
  nid: DEFAULT_NID,
  consent_request_id: f.consentRequestId,
  login_challenge_id: f.loginChallengeId,
  client_id: f.clientId,
  subject: f.subject,
  login_session_id: f.loginSessionId,
  request_url: f.requestUrl,
  requested_scope: json(f.requestedScope),
  requested_audience: json(f.requestedAudience),
  requested_at: f.requestedAt,
  authenticated_at: f.authenticatedAt,
  oidc_context: json(f.oidcContext),
  acr: f.acr,
  amr: json(f.amr),
  context: json(f.context ?? {}),
  force_subject_identifier: f.forceSubjectIdentifier,
  consent_skip: f.consentSkip,
  granted_scope: json(f.grantedScope),
  granted_audience: json(f.grantedAudience),
  remember: f.remember,
  remember_for: f.rememberFor,
  handled_at: f.handledAt,
  expires_at: f.expiresAt,
  session_data: f.sessionData,
});

/** Inserts the consent row; false when the consent request id was already stored (verifier reuse). */
export async function insertConsentFlow(db: Executor, f: ConsentFlow): Promise<boolean> {
  const r = await db
    .insertInto('oauth2_flows')
    .values(consentFlowValues(f))
    .onConflict((oc) => oc.columns(['nid', 'consent_request_id']).doNothing())
    .returning('consent_request_id')
    .executeTakeFirst();
  return r !== undefined;
}

/**
 * The return from the consent UI of a `response_type=code` flow in ONE statement: records the use
 * of the consent verifier — unless the consent row exists already —, then only if it was recorded,
 * stores the consent row, then only if that was stored, the authorization code row (given as its
 * column values). False when the verifier or the consent was used before: then nothing was written.
 */
export async function storeConsentWithCode(
  db: Executor,
  f: ConsentFlow,
  verifier: { id: string; expiresAt: Date },
  code: Record<string, unknown>,
): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`with v as (
      insert into oauth2_used_verifiers (nid, id, expires_at)
      select ${DEFAULT_NID}::uuid, ${verifier.id}::text, ${verifier.expiresAt}::timestamptz
      where not exists (select 1 from oauth2_flows where nid = ${DEFAULT_NID} and consent_request_id = ${f.consentRequestId})
      on conflict (nid, id) do nothing returning id
    ), f as (
      ${insertFrom('oauth2_flows', consentFlowValues(f), 'v')}
      on conflict (nid, consent_request_id) do nothing returning consent_request_id
    ), c as (
      ${insertFrom('oauth2_authorization_codes', code, 'f')} returning 1
    )
    select count(*)::int as n from c`.execute(db);
  return rows[0]?.n === 1;
}

/**
 * Records the use of a login or consent verifier (`login:<id>` / `consent:<id>`) until it expires;
 * false when it was used before (the caller refuses it).
 */
export async function markVerifierUsed(db: Executor, id: string, expiresAt: Date): Promise<boolean> {
  const r = await db
    .insertInto('oauth2_used_verifiers')
    .values({ nid: DEFAULT_NID, id, expires_at: expiresAt })
    .onConflict((oc) => oc.columns(['nid', 'id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Whether a login or consent verifier was used already (see markVerifierUsed). */
export async function isVerifierUsed(db: Executor, id: string): Promise<boolean> {
  const r = await db
    .selectFrom('oauth2_used_verifiers')
    .select('id')
    .where('nid', '=', DEFAULT_NID)
    .where('id', '=', id)
    .executeTakeFirst();
  return r !== undefined;
}

/** Records a consumed consent id (discarded skipped consents); false when it was already used. */
export async function insertUsedConsent(db: Executor, consentRequestId: string, expiresAt: Date): Promise<boolean> {
  const r = await db
    .insertInto('oauth2_used_consents')
    .values({ nid: DEFAULT_NID, consent_request_id: consentRequestId, expires_at: expiresAt })
    .onConflict((oc) => oc.columns(['nid', 'consent_request_id']).doNothing())
    .returning('consent_request_id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Whether the consent request id was consumed (full row, used-id record or used consent verifier). */
export async function isConsentUsed(db: Executor, consentRequestId: string): Promise<boolean> {
  const r = await db
    .selectNoFrom((eb) => [
      eb
        .exists(
          eb
            .selectFrom('oauth2_flows')
            .select('nid')
            .where('nid', '=', DEFAULT_NID)
            .where('consent_request_id', '=', consentRequestId),
        )
        .as('flow'),
      eb
        .exists(
          eb
            .selectFrom('oauth2_used_consents')
            .select('nid')
            .where('nid', '=', DEFAULT_NID)
            .where('consent_request_id', '=', consentRequestId),
        )
        .as('used'),
      eb
        .exists(
          eb
            .selectFrom('oauth2_used_verifiers')
            .select('nid')
            .where('nid', '=', DEFAULT_NID)
            .where('id', '=', `consent:${consentRequestId}`),
        )
        .as('verified'),
    ])
    .executeTakeFirstOrThrow();
  return Boolean(r.flow) || Boolean(r.used) || Boolean(r.verified);
}

export interface ConsentListQuery {
  subject: string;
  loginSessionId?: string | undefined;
  /** Keyset: consent request ids greater than this. */
  after?: string | undefined;
  limit: number;
  now: Date;
}

/** Handled, non-skipped, unexpired consents of a subject, ordered by consent request id. */
export async function listConsentFlows(db: Executor, q: ConsentListQuery): Promise<ConsentFlow[]> {
  let query = db
    .selectFrom('oauth2_flows')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('subject', '=', q.subject)
    .where('consent_skip', '=', false)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', q.now)]));
  if (q.loginSessionId) query = query.where('login_session_id', '=', q.loginSessionId);
  if (q.after) query = query.where('consent_request_id', '>', q.after);
  const rows = await query.orderBy('consent_request_id').limit(q.limit).execute();
  return rows.map(toFlow);
}

export type ConsentSelector = { subject: string; clientId?: string } | { consentRequestId: string };

/** Deletes the selected consent rows and returns their ids (the grant families to revoke). */
export async function deleteConsentFlows(db: Executor, sel: ConsentSelector): Promise<string[]> {
  let q = db.deleteFrom('oauth2_flows').where('nid', '=', DEFAULT_NID);
  if ('consentRequestId' in sel) q = q.where('consent_request_id', '=', sel.consentRequestId);
  else {
    q = q.where('subject', '=', sel.subject);
    if (sel.clientId !== undefined) q = q.where('client_id', '=', sel.clientId);
  }
  const rows = await q.returning('consent_request_id').execute();
  return rows.map((r) => r.consent_request_id);
}
