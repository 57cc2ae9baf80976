/**
 * `POST /oauth2/token`: authenticate the client, run the grant handler for `grant_type` (its checks,
 * then the plan of the tokens to issue), store the plan (store/token-plan.ts), answer.
 */

import type { Dpop } from '../dpop.ts';
import { countClientAuthFailure } from '../metrics.ts';
import { type CertificateSource, NO_CERTIFICATE } from '../mtls.ts';
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
      /** The request's client certificate (RFC 8705), read only when a check needs it. */
      certificate: CertificateSource = NO_CERTIFICATE,
    ): Promise<TokenResponse> {
      if (!Object.keys(form).length && !authorization) {
        throw oauth2Error('invalid_request', { hint: 'The POST body can not be empty.' });
      }
      const grantType = (form.grant_type ?? '').trim();
      if (!grantType) throw oauth2Error('invalid_request', { hint: "Request parameter 'grant_type' is missing" });
      const client = await authenticateClient(d.clientAuth, { form, authorization, certificate }).catch(
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
      // RFC 8705 §3: such a client's access tokens are always certificate-bound; issuing an unbound
      // one would let a resource server that relies on the registration accept a bearer token.
      if (client.tlsClientCertificateBoundAccessTokens && !certificate()) {
        throw oauth2Error('invalid_request', {
          hint: 'The OAuth 2.0 Client is registered with tls_client_certificate_bound_access_tokens: token requests need a TLS client certificate.',
        });
      }
      const plan = await grant(d, client, form, { ...(proof ? { proof } : {}), certificate });
      const outcome = await persistPlan(d.db, plan, d);
      if (outcome === 'stored') return plan.response;
      throw plan.refused ? await plan.refused(outcome) : new Error(`token plan not stored: ${outcome}`);
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
