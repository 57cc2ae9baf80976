/**
 * `POST /oauth2/token`: authenticate the client, run the grant handler for `grant_type` (its checks,
 * then the plan of the tokens to issue), store the plan (store/token-plan.ts), answer.
 */

import type { Dpop } from '../dpop.ts';
import { countClientAuthFailure } from '../metrics.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { persistPlan } from '../store/token-plan.ts';
import { authenticateClient, type ClientAuthDeps } from './client-auth.ts';
import { GRANTS, type GrantDeps } from './grants/index.ts';
import type { TokenResponse } from './issue.ts';

export interface TokenServiceDeps extends GrantDeps {
  clientAuth: ClientAuthDeps;
  dpop: Dpop;
}

export function createTokenService(d: TokenServiceDeps) {
  return {
    /** Throws RFC 6749 errors; an unknown grant type is `invalid_request` (Hydra). */
    async exchange(
      form: Record<string, string>,
      authorization: string | undefined,
      /** The `DPoP` header (RFC 9449), when sent. */
      dpopProof?: string,
    ): Promise<TokenResponse> {
      if (!Object.keys(form).length && !authorization) {
        throw oauth2Error('invalid_request', { hint: 'The POST body can not be empty.' });
      }
      const grantType = (form.grant_type ?? '').trim();
      if (!grantType) throw oauth2Error('invalid_request', { hint: "Request parameter 'grant_type' is missing" });
      const client = await authenticateClient(d.clientAuth, { form, authorization }).catch(
        countClientAuthFailure(form, authorization),
      );
      const grant = GRANTS[grantType];
      if (!grant || !Object.hasOwn(GRANTS, grantType)) throw oauth2Error('invalid_request');
      const proof = await d.dpop.verify(dpopProof, { htm: 'POST', htu: d.tokenUrls });
      if (!proof && client.dpopBoundAccessTokens) {
        throw oauth2Error('invalid_dpop_proof', {
          hint: 'The OAuth 2.0 Client is registered with dpop_bound_access_tokens: token requests need a DPoP proof.',
        });
      }
      const plan = await grant(d, client, form, proof);
      const outcome = await persistPlan(d.db, plan, d);
      if (outcome === 'stored') return plan.response;
      throw plan.refused ? await plan.refused(outcome) : new Error(`token plan not stored: ${outcome}`);
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
