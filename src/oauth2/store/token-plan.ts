/**
 * The one way token rows of the token endpoint are written. A grant checks its request and hands
 * back a plan: the credential it spends, the rows to insert, the audit events that go with them.
 * `persistPlan` stores the plan and picks how:
 *
 * - **one statement** when that is all there is to write (no audit row, or only an audit row):
 *   a spent code or device request with its token rows is one statement of data-modifying CTEs
 *   (`spendIssuing`), atomic without a transaction;
 * - **group commit** for a lone access-token row (machine grants without audit rows): written
 *   together with those of concurrent requests (token-batch.ts); with the `jti` of the DPoP proof
 *   it was issued on, when the caller left that to the store: the jti and the row in one statement,
 *   the row only if the jti was new;
 * - **a transaction** otherwise: audit rows commit with the tokens, and a refresh-token rotation
 *   locks the presented token's row (READ COMMITTED, `FOR UPDATE`), re-judges it, rotates it and
 *   stores the new pair, so parallel refreshes of one token queue on that row.
 *
 * Audit is a dependency (`Audit`): whether it writes rows decides the strategy per call. A proof's
 * `jti` handed to `persistPlan` is recorded before anything else is written, or with the lone row:
 * a plan whose jti was used already writes nothing (`replayed`).
 */
import type { Audit, AuditEvent } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import { isRetryableTxError, withTx } from '../../core/db/tx.ts';
import type { Db, Executor } from '../tables.ts';
import { insertAccessTokenGrouped, insertAccessTokenWithJtiGrouped, insertJtiGrouped } from './token-batch.ts';
import {
  deactivateRefreshTokensOfRequest,
  deleteAccessToken,
  deleteAccessTokensOfRequest,
  lockRefreshToken,
  markRefreshTokenUsed,
} from './token-families.ts';
import {
  type AccessRecord,
  deleteTokensOfRequests,
  insertTokens,
  type JtiRow,
  type NewRefreshRecord,
  type OneTime,
  type RefreshRecord,
  spendIssuing,
  type TokenChanges,
} from './tokens.ts';

/** A refresh token to rotate: what the locked row must satisfy, and what reuse revokes. */
export interface Rotation {
  kind: 'refresh';
  signature: string;
  requestId: string;
  /** The grant's rules on the locked row (see token/rotation.ts). */
  usable(locked: RefreshRecord, now: Date): boolean;
  /** Graceful rotation: only the access token issued with this refresh token goes. */
  graceful: boolean;
  /** Recorded with the revocation when the locked row is no longer usable. */
  reuse: AuditEvent;
}

/** What the new tokens depend on: nothing (machine grants), a one-time credential, a rotation. */
export type Spend = { kind: 'none' } | OneTime | Rotation;

export interface TokenPlan {
  spend: Spend;
  /** The rows to insert; `access` is absent for stateless JWT access tokens. */
  rows: { access: AccessRecord | undefined; refresh: NewRefreshRecord | undefined };
  /** Recorded with the rows. */
  events: AuditEvent[];
}

/**
 * `stored`, or why not: `spent` (the code or device request was used), `gone` (the refresh token
 * was deleted meanwhile), `reused` (the locked refresh token was no longer usable: its grant is
 * revoked), `contended` (the rotation still met serialization failures after withTx's retries),
 * `replayed` (the proof's `jti` given with the plan was used already; nothing was written).
 */
export type PlanOutcome = 'stored' | 'spent' | 'gone' | 'reused' | 'contended' | 'replayed';

export interface PlanDeps {
  audit: Audit;
  clock: Clock;
  /** Announces the access tokens a rotation or a reuse deletes (store/tokens.ts `TokenChanges`). */
  changes: TokenChanges;
}

async function record(exec: Executor, events: readonly AuditEvent[], audit: Audit): Promise<void> {
  for (const e of events) await audit.record(exec, e);
}

/** The plan's token writes (one statement, or none); false when its credential was spent already. */
async function writeRows(exec: Executor, spend: OneTime | { kind: 'none' }, plan: TokenPlan): Promise<boolean> {
  const { access, refresh } = plan.rows;
  if (spend.kind !== 'none') return spendIssuing(exec, spend, access, refresh);
  await insertTokens(exec, access, refresh);
  return true;
}

/** Deletes every token of a grant and records why, in one transaction. */
export function revokeGrant(
  db: Db,
  requestId: string,
  event: AuditEvent,
  d: { audit: Audit; changes: TokenChanges },
): Promise<void> {
  const { audit } = d;
  return withTx(db, async (trx) => {
    await deleteTokensOfRequests(trx, [requestId], d.changes);
    await audit.record(trx, event);
  });
}

async function rotate(db: Db, plan: TokenPlan, r: Rotation, d: PlanDeps): Promise<PlanOutcome> {
  try {
    return await withTx(
      db,
      async (trx): Promise<PlanOutcome> => {
        const locked = await lockRefreshToken(trx, r.signature);
        if (!locked) return 'gone';
        const now = d.clock.now();
        if (!r.usable(locked, now)) {
          await deleteTokensOfRequests(trx, [r.requestId], d.changes);
          await d.audit.record(trx, r.reuse);
          return 'reused';
        }
        await markRefreshTokenUsed(trx, r.signature, now);
        if (r.graceful) {
          if (locked.accessTokenSignature) await deleteAccessToken(trx, locked.accessTokenSignature, d.changes);
          else await deleteAccessTokensOfRequest(trx, r.requestId, d.changes);
        } else {
          // Strict: one token chain per grant.
          await deleteAccessTokensOfRequest(trx, r.requestId, d.changes);
          await deactivateRefreshTokensOfRequest(trx, r.requestId);
        }
        await insertTokens(trx, plan.rows.access, plan.rows.refresh);
        await record(trx, plan.events, d.audit);
        return 'stored';
      },
      { isolation: 'read committed' },
    );
  } catch (e) {
    if (!isRetryableTxError(e)) throw e;
    return 'contended';
  }
}

/**
 * Stores a plan (see above for the strategies). Nothing is written unless it answers `stored`.
 * `jti`: a proof's jti that must be used once (RFC 9449 §11.1), recorded here — in one statement
 * with a lone access-token row, else before anything else (and kept whatever follows); `replayed`
 * when it was used already, and then nothing is written.
 */
export async function persistPlan(db: Db, plan: TokenPlan, d: PlanDeps, jti?: JtiRow): Promise<PlanOutcome> {
  const { spend, rows, events } = plan;
  const auditRows = d.audit.recordsRows() ? events.length : 0;
  if (jti && spend.kind === 'none' && rows.access && !rows.refresh && !auditRows) {
    if (!(await insertAccessTokenWithJtiGrouped(db, rows.access, jti))) return 'replayed';
    await record(db, events, d.audit);
    return 'stored';
  }
  if (jti && !(await insertJtiGrouped(db, jti.signature, jti.expiresAt, jti.now))) return 'replayed';
  if (spend.kind === 'refresh') return rotate(db, plan, spend, d);
  const tokenWrites = spend.kind === 'none' && !rows.access && !rows.refresh ? 0 : 1;
  if (tokenWrites + auditRows > 1) {
    // withTx retries the whole body on a serialization failure (CockroachDB reports them far more often).
    return withTx(db, async (trx) => {
      if (!(await writeRows(trx, spend, plan))) return 'spent';
      await record(trx, events, d.audit);
      return 'stored';
    });
  }
  if (spend.kind === 'none' && rows.access && !rows.refresh && !auditRows) {
    await insertAccessTokenGrouped(db, rows.access);
  } else if (!(await writeRows(db, spend, plan))) {
    return 'spent';
  }
  // Span events and metrics (and at most the one audit row, when nothing else was written).
  await record(db, events, d.audit);
  return 'stored';
}
