/**
 * `grant_type=refresh_token` (RFC 6749 §6) with Hydra's rotation (see ../rotation.ts).
 *
 * Preconditions, in Hydra's order: the client may use the grant (`unauthorized_client`); the token
 * exists (`invalid_grant`), and a used one outside the grace rules is reuse, which revokes every
 * access and refresh token of the grant; not expired; `offline`/`offline_access` was granted
 * (`scope_not_granted`); same client (`invalid_grant`); the granted scopes are still allowed to the
 * client (`invalid_scope`) and the granted audience too; a public client's refresh token bound to a
 * DPoP key or a client certificate is used with proof of it. A `scope` parameter is ignored.
 *
 * Concurrency: the new tokens are signed first; the plan then rotates the token, which the store
 * does in one READ COMMITTED transaction that locks the refresh token row (`FOR UPDATE`),
 * re-judges it with these rules, rotates it and stores the new pair (store/token-plan.ts). Parallel
 * refreshes of one token therefore queue on that row and each sees the previous one's commit: they
 * succeed exactly as often as the rules allow and every other one is a clean `invalid_grant`.
 */

import type { AuditEvent } from '../../../core/audit/events.ts';
import { verifyOpaqueToken } from '../../../core/crypto/hmac.ts';
import { metrics } from '../../../core/observability/metrics.ts';
import { checkBoundExchange } from '../../dpop.ts';
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, type FlowClient } from '../../ports.ts';
import { narrowing } from '../../resource.ts';
import { firstDisallowedAudience, scopeStrategy } from '../../scope.ts';
import { revokeGrant } from '../../store/token-plan.ts';
import { findRefreshToken, type RefreshRecord } from '../../store/tokens.ts';
import { boundTo, checkBoundCertificate, type Possession } from '../binding.ts';
import { gracePolicyOf, refreshTokenUsable } from '../rotation.ts';
import type { GrantSession } from '../session.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';

const notValid = () => oauth2Error('invalid_grant', { hint: 'The refresh token is malformed or not valid.' });
const alreadyUsed = () =>
  oauth2Error('invalid_grant', {
    hint: 'The refresh token was already used.',
    debug: 'Refresh token re-use was detected. All related tokens have been revoked.',
  });

/** Preconditions 3 to 6 (and the audience), on the token as read before the lock. */
function checkRefresh(d: GrantDeps, client: FlowClient, row: RefreshRecord): void {
  if (row.expiresAt && row.expiresAt.getTime() < d.clock.now().getTime()) {
    throw oauth2Error('invalid_grant', { hint: 'The refresh token expired.' });
  }
  if (!row.grantedScope.includes('offline') && !row.grantedScope.includes('offline_access')) {
    throw oauth2Error('scope_not_granted', {
      hint: "The OAuth 2.0 Client was not granted scope offline or offline_access and may thus not perform the 'refresh_token' authorization grant.",
    });
  }
  if (row.clientId !== client.id) {
    throw oauth2Error('invalid_grant', {
      hint: 'The OAuth 2.0 Client ID from this request does not match the ID during the initial token issuance.',
    });
  }
  const strategy = scopeStrategy(d.config.strategies.scope);
  const allowed = client.scope.split(' ').filter(Boolean);
  for (const s of row.grantedScope) {
    if (!strategy(allowed, s)) {
      throw oauth2Error('invalid_scope', { hint: `The OAuth 2.0 Client is not allowed to request scope '${s}'.` });
    }
  }
  const aud = firstDisallowedAudience(client.audience, row.grantedAudience);
  if (aud !== undefined) {
    throw oauth2Error('invalid_request', {
      hint: `Requested audience '${aud}' has not been whitelisted by the OAuth 2.0 Client.`,
    });
  }
}

/** Reuse revokes the grant; the revocation and this event commit together. */
const reuseDetected = (clientId: string, requestId: string): AuditEvent => ({
  type: 'oauth2.refresh_token.reuse_detected',
  actor: { kind: 'client', id: clientId },
  target: { kind: 'grant', id: requestId },
  outcome: 'failure',
});

export async function refreshTokenGrant(
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  held: Possession,
): Promise<GrantPlan> {
  if (!clientGrantTypes(client).includes('refresh_token')) {
    throw oauth2Error('unauthorized_client', {
      hint: "The OAuth 2.0 Client is not allowed to use authorization grant 'refresh_token'.",
    });
  }
  const signature = verifyOpaqueToken('ory_rt_', form.refresh_token ?? '', d.config.secrets.system);
  const row = signature ? await findRefreshToken(d.db, signature) : undefined;
  if (!signature || !row) throw notValid();
  const policy = gracePolicyOf(d.config);
  const reuse = reuseDetected(row.clientId, row.requestId);
  if (!refreshTokenUsable(row, d.clock.now(), policy)) {
    metrics.refreshReuse.inc();
    await revokeGrant(d.db, row.requestId, reuse, d);
    throw alreadyUsed();
  }
  checkRefresh(d, client, row);
  const session = d.sessions.open<GrantSession>(row.sessionData);
  // A public client's refresh token is bound to its DPoP key (RFC 9449 §5) and/or its client
  // certificate (RFC 8705 §4), as issued (token/issue.ts).
  checkBoundExchange(session.cnf, held.proof, 'refresh token');
  checkBoundCertificate(session.cnf, held.certificate, 'refresh token');
  const issued = await d.issuer.planTokens(
    {
      requestId: row.requestId,
      client,
      requestedScope: row.requestedScope,
      grantedScope: row.grantedScope,
      requestedAudience: row.requestedAudience,
      grantedAudience: row.grantedAudience,
      requestedAt: d.clock.now(),
      session,
      ...narrowing(row.grantedAudience, form.resource),
      ...boundTo(client, held),
    },
    'refresh_token',
  );
  return {
    ...issued,
    spend: {
      kind: 'refresh',
      signature,
      requestId: row.requestId,
      usable: (locked, now) => refreshTokenUsable(locked, now, policy),
      graceful: policy.periodMs > 0,
      reuse,
    },
    async refused(outcome) {
      if (outcome === 'reused') {
        metrics.refreshReuse.inc();
        return alreadyUsed();
      }
      if (outcome === 'contended') {
        return oauth2Error('invalid_request', {
          hint: 'Failed to refresh token because of multiple concurrent requests using the same token. Please retry the request.',
        });
      }
      return notValid();
    },
  };
}
