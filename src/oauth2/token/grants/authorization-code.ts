/**
 * `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6). Codes are one-time: the plan
 * spends the code, so the store flips it inactive with the statement (or, with audit rows, the
 * transaction) that stores the tokens, and presenting a used code revokes every token of its grant
 * family (RFC 6749 §4.1.2) before failing with `invalid_grant`.
 */

import { verifyOpaqueToken } from '../../../core/crypto/hmac.ts';
import { verifyPkce } from '../../authorize/checks/pkce.ts';
import { checkBoundExchange } from '../../dpop.ts';
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, type FlowClient, isPublicClient } from '../../ports.ts';
import { narrowing } from '../../resource.ts';
import { deleteTokensOfRequests, findCode } from '../../store/tokens.ts';
import { boundTo, type Possession } from '../binding.ts';
import type { GrantSession } from '../session.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';

export type { GrantDeps };

const used = () => oauth2Error('invalid_grant', { hint: 'The authorization code has already been used.' });

export async function authorizationCodeGrant(
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  held: Possession,
): Promise<GrantPlan> {
  if (!clientGrantTypes(client).includes('authorization_code')) {
    throw oauth2Error('unauthorized_client', {
      hint: "The OAuth 2.0 Client is not allowed to use authorization grant 'authorization_code'.",
    });
  }
  const signature = verifyOpaqueToken('ory_ac_', form.code ?? '', d.config.secrets.system);
  const code = signature ? await findCode(d.db, signature) : undefined;
  if (!signature || !code) throw oauth2Error('invalid_grant', { hint: 'The authorization code is not valid.' });
  if (!code.active) {
    await deleteTokensOfRequests(d.db, [code.requestId], d.changes);
    throw used();
  }
  if (code.expiresAt.getTime() < d.clock.now().getTime()) {
    throw oauth2Error('invalid_grant', { hint: 'The authorization code has expired.' });
  }
  if (code.clientId !== client.id) {
    throw oauth2Error('invalid_grant', {
      hint: 'The OAuth 2.0 Client ID from this request does not match the one from the authorize request.',
    });
  }
  if (code.redirectUri && code.redirectUri !== (form.redirect_uri ?? '')) {
    throw oauth2Error('invalid_grant', {
      hint: "The 'redirect_uri' from this request does not match the one from the authorize request.",
    });
  }
  verifyPkce(
    {
      enforced: d.config.oauth2.pkce.enforced,
      enforcedForPublicClients: d.config.oauth2.pkce.enforced_for_public_clients,
      allowPlain: d.config.oauth2.pkce.allow_plain,
    },
    isPublicClient(client),
    code.codeChallenge,
    code.codeChallengeMethod,
    form.code_verifier ?? '',
  );
  const session = d.sessions.open<GrantSession>(code.sessionData);
  checkBoundExchange(session.cnf, held.proof, 'authorization code');
  // Signed before anything is written, so no signing (and no second pooled connection) happens in a transaction.
  const issued = await d.issuer.planTokens(
    {
      requestId: code.requestId,
      client,
      requestedScope: code.requestedScope,
      grantedScope: code.grantedScope,
      requestedAudience: code.requestedAudience,
      grantedAudience: code.grantedAudience,
      requestedAt: code.requestedAt,
      session,
      ...narrowing(code.grantedAudience, form.resource),
      ...boundTo(client, held),
    },
    'authorization_code',
  );
  return {
    ...issued,
    spend: { kind: 'code', signature },
    async refused() {
      // Lost a race with another exchange of the same code: treat it as the replay it is.
      await deleteTokensOfRequests(d.db, [code.requestId], d.changes);
      return used();
    },
  };
}
