/**
 * `grant_type=urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4, §3.5). Each poll is
 * recorded; a poll sooner than `oauth2.device_authorization.token_polling_interval` after the
 * previous one gets `slow_down`. Then: `expired_token` past `ttl.device_user_code`,
 * `authorization_pending` until login and consent are done, `access_denied` when the user refused,
 * and the tokens exactly once (the plan spends the device request: accepted → issued with the
 * statement, or with audit rows the transaction, that stores the tokens). A device code presented
 * again after its tokens were issued revokes them and fails with `invalid_grant` (fosite's replay
 * rule for codes).
 */

import { verifyOpaqueToken } from '../../../core/crypto/hmac.ts';
import { withTx } from '../../../core/db/tx.ts';
import { DEVICE_CODE_GRANT } from '../../device/codes.ts';
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, type FlowClient } from '../../ports.ts';
import { narrowing } from '../../resource.ts';
import { findDeviceRequest, lockDeviceRequest, touchPoll } from '../../store/device.ts';
import { deleteTokensOfRequests } from '../../store/tokens.ts';
import { boundTo, type Possession } from '../binding.ts';
import type { GrantSession } from '../session.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';

const used = () => oauth2Error('invalid_grant', { hint: 'The device code has already been used.' });

type Poll =
  | { kind: 'error'; error: ReturnType<typeof oauth2Error> }
  | { kind: 'ready' }
  | { kind: 'replay'; requestId: string };

export async function deviceCodeGrant(
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  held: Possession,
): Promise<GrantPlan> {
  if (!clientGrantTypes(client).includes(DEVICE_CODE_GRANT)) {
    throw oauth2Error('unauthorized_client', {
      hint: `The OAuth 2.0 Client is not allowed to use authorization grant '${DEVICE_CODE_GRANT}'.`,
    });
  }
  const signature = verifyOpaqueToken('ory_dc_', form.device_code ?? '', d.config.secrets.system);
  if (!signature) throw oauth2Error('invalid_grant', { hint: 'The device code is not valid.' });
  const now = d.clock.now();
  const interval = d.config.oauth2.device_authorization.token_polling_interval;

  // One short transaction records the poll and decides; the row lock orders concurrent polls.
  const poll = await withTx(d.db, async (trx): Promise<Poll> => {
    const r = await lockDeviceRequest(trx, signature);
    if (!r) return { kind: 'error', error: oauth2Error('invalid_grant', { hint: 'The device code is not valid.' }) };
    if (r.clientId !== client.id) {
      return {
        kind: 'error',
        error: oauth2Error('invalid_grant', {
          hint: 'The OAuth 2.0 Client ID from this request does not match the one from the authorize request.',
        }),
      };
    }
    if (r.state === 'issued') return { kind: 'replay', requestId: r.requestId };
    if (r.expiresAt.getTime() <= now.getTime()) {
      return {
        kind: 'error',
        error: oauth2Error('expired_token', { hint: `Device code expired at '${r.expiresAt.toISOString()}'.` }),
      };
    }
    await touchPoll(trx, signature, now);
    if (r.lastPolledAt && now.getTime() - r.lastPolledAt.getTime() < interval) {
      return {
        kind: 'error',
        error: oauth2Error('slow_down', {
          hint: "Ensure that you don't call the token endpoint sooner than the polling interval",
        }),
      };
    }
    if (r.state === 'rejected') return { kind: 'error', error: oauth2Error('access_denied') };
    if (r.state === 'pending') return { kind: 'error', error: oauth2Error('authorization_pending') };
    return { kind: 'ready' };
  });
  if (poll.kind === 'error') throw poll.error;
  if (poll.kind === 'replay') {
    await deleteTokensOfRequests(d.db, [poll.requestId], d.changes);
    throw used();
  }

  const r = await findDeviceRequest(d.db, signature);
  if (!r) throw oauth2Error('invalid_grant', { hint: 'The device code is not valid.' });
  // Signed before anything is written, so no signing happens in a transaction.
  const issued = await d.issuer.planTokens(
    {
      requestId: r.requestId,
      client,
      requestedScope: r.requestedScope,
      grantedScope: r.grantedScope,
      requestedAudience: r.requestedAudience,
      grantedAudience: r.grantedAudience,
      requestedAt: r.requestedAt,
      session: d.sessions.open<GrantSession>(r.sessionData),
      ...narrowing(r.grantedAudience, form.resource),
      ...boundTo(client, held),
    },
    'device_authorization',
  );
  return {
    ...issued,
    spend: { kind: 'device', signature },
    async refused() {
      // Lost a race with a concurrent poll of the same code: that one got the tokens.
      await deleteTokensOfRequests(d.db, [r.requestId], d.changes);
      return used();
    },
  };
}
