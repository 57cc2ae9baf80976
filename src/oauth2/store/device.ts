/** Device authorization requests (`oauth2_device_requests`) and wrong-user-code counters. */
import type { Selectable } from 'kysely';
import { DEFAULT_NETWORK_ID as DEFAULT_NID, type DeviceRequestsTable, type Executor } from '../tables.ts';
import { fromRow } from './tokens.ts';

export type DeviceState = 'pending' | 'accepted' | 'rejected' | 'issued';

export interface DeviceRequest {
  signature: string;
  userCodeSignature: string;
  requestId: string;
  clientId: string;
  subject: string;
  requestedScope: string[];
  grantedScope: string[];
  requestedAudience: string[];
  grantedAudience: string[];
  requestedAt: Date;
  expiresAt: Date;
  state: DeviceState;
  lastPolledAt: Date | null;
  sessionData: string;
}

const toRequest = (r: Selectable<DeviceRequestsTable>): DeviceRequest => ({
  ...fromRow(r),
  userCodeSignature: r.user_code_signature,
  expiresAt: r.expires_at,
  state: r.state,
  lastPolledAt: r.last_polled_at,
});

const json = (v: unknown) => JSON.stringify(v ?? []);

/** False when the user code signature is taken (the caller draws another code). */
export async function insertDeviceRequest(
  db: Executor,
  r: Pick<
    DeviceRequest,
    | 'signature'
    | 'userCodeSignature'
    | 'requestId'
    | 'clientId'
    | 'requestedScope'
    | 'requestedAudience'
    | 'requestedAt'
    | 'expiresAt'
  >,
): Promise<boolean> {
  const row = await db
    .insertInto('oauth2_device_requests')
    .values({
      nid: DEFAULT_NID,
      signature: r.signature,
      user_code_signature: r.userCodeSignature,
      request_id: r.requestId,
      client_id: r.clientId,
      requested_scope: json(r.requestedScope),
      granted_scope: '[]',
      requested_audience: json(r.requestedAudience),
      granted_audience: '[]',
      requested_at: r.requestedAt,
      expires_at: r.expiresAt,
    })
    .onConflict((oc) => oc.columns(['nid', 'user_code_signature']).doNothing())
    .returning('signature')
    .executeTakeFirst();
  return row !== undefined;
}

/** The request holding one of these user-code signatures (one per configured secret). */
export async function findByUserCode(db: Executor, signatures: readonly string[]): Promise<DeviceRequest | undefined> {
  if (!signatures.length) return undefined;
  const r = await db
    .selectFrom('oauth2_device_requests')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('user_code_signature', 'in', [...signatures])
    .executeTakeFirst();
  return r ? toRequest(r) : undefined;
}

/** The request of a device code, locked for the rest of the transaction. */
export async function lockDeviceRequest(db: Executor, signature: string): Promise<DeviceRequest | undefined> {
  const r = await db
    .selectFrom('oauth2_device_requests')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .forUpdate()
    .executeTakeFirst();
  return r ? toRequest(r) : undefined;
}

export async function findDeviceRequest(db: Executor, signature: string): Promise<DeviceRequest | undefined> {
  const r = await db
    .selectFrom('oauth2_device_requests')
    .selectAll()
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .executeTakeFirst();
  return r ? toRequest(r) : undefined;
}

export async function touchPoll(db: Executor, signature: string, at: Date): Promise<void> {
  await db
    .updateTable('oauth2_device_requests')
    .set({ last_polled_at: at })
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .execute();
}

/** Moves a pending request to accepted (with the grant) or rejected; false when it was not pending. */
export async function settleDeviceRequest(
  db: Executor,
  signature: string,
  outcome:
    | { state: 'accepted'; subject: string; grantedScope: string[]; grantedAudience: string[]; sessionData: string }
    | { state: 'rejected' },
): Promise<boolean> {
  const set =
    outcome.state === 'accepted'
      ? {
          state: 'accepted' as const,
          subject: outcome.subject,
          granted_scope: json(outcome.grantedScope),
          granted_audience: json(outcome.grantedAudience),
          session_data: outcome.sessionData,
        }
      : { state: 'rejected' as const };
  const r = await db
    .updateTable('oauth2_device_requests')
    .set(set)
    .where('nid', '=', DEFAULT_NID)
    .where('signature', '=', signature)
    .where('state', '=', 'pending')
    .returning('signature')
    .executeTakeFirst();
  return r !== undefined;
}

/** Counts one wrong user code for a device challenge; returns the count so far. */
export async function countWrongUserCode(db: Executor, challengeId: string, expiresAt: Date): Promise<number> {
  const r = await db
    .insertInto('oauth2_device_challenge_attempts')
    .values({ nid: DEFAULT_NID, challenge_id: challengeId, attempts: 1, expires_at: expiresAt })
    .onConflict((oc) =>
      oc
        .columns(['nid', 'challenge_id'])
        .doUpdateSet((eb) => ({ attempts: eb('oauth2_device_challenge_attempts.attempts', '+', 1) })),
    )
    .returning('attempts')
    .executeTakeFirstOrThrow();
  return r.attempts;
}

export async function wrongUserCodes(db: Executor, challengeId: string): Promise<number> {
  const r = await db
    .selectFrom('oauth2_device_challenge_attempts')
    .select('attempts')
    .where('nid', '=', DEFAULT_NID)
    .where('challenge_id', '=', challengeId)
    .executeTakeFirst();
  return r?.attempts ?? 0;
}
