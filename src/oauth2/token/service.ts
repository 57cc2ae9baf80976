/**
 * `POST /oauth2/token`: authenticate the client, run the grant handler for `grant_type` (its checks,
 * then the plan of the tokens to issue), store the plan (store/token-plan.ts), answer.
 */

import { type Dpop, replayedProof, type VerifiedProof } from '../dpop.ts';
import { countClientAuthFailure } from '../metrics.ts';
import { type CertificateSource, NO_CERTIFICATE } from '../mtls.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { FlowClient } from '../ports.ts';
import { persistPlan } from '../store/token-plan.ts';
import type { JtiRow } from '../store/tokens.ts';
import { authenticateClient, type ClientAuthDeps } from './client-auth.ts';
import type { GrantPlan } from './grants/deps.ts';
import { GRANTS, type GrantDeps, type GrantHandler } from './grants/index.ts';
import type { TokenResponse } from './issue.ts';

export interface TokenServiceDeps extends GrantDeps {
  clientAuth: ClientAuthDeps;
  dpop: Dpop;
}

/**
 * Grants whose checks and planning act on nothing outside the process (no write, no call out) when
 * no token hook is configured: their DPoP proof's `jti` is recorded in the statement that stores
 * the token (RFC 9449 §11.1: no token is answered before its proof's jti is recorded, and a replayed
 * proof's request writes no token), or, when the request fails before that, before the error is
 * answered. Every other grant records it before it runs, as the proof is checked.
 */
const JTI_WITH_TOKEN: ReadonlySet<string> = new Set(['client_credentials']);

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
      const checked = await d.dpop.verifyUnspent(dpopProof, { htm: 'POST', htu: d.tokenUrls });
      if (!checked || !JTI_WITH_TOKEN.has(grantType) || d.config.oauth2.token_hook) {
        const proof = checked && (await d.dpop.spend(checked));
        return store(await plan(grant, client, form, proof, certificate));
      }
      const planned = await plan(grant, client, form, { jkt: checked.jkt }, certificate).catch(async (e: unknown) => {
        // Refused before anything was written: the proof is spent all the same, and a replayed one
        // is answered as such, as when its jti is recorded first.
        await d.dpop.spend(checked);
        throw e;
      });
      return store(planned, checked.jti);
    },
  };

  /** The client's registered demands on the request, then the grant's checks and its plan. */
  async function plan(
    grant: GrantHandler,
    client: FlowClient,
    form: Record<string, string>,
    proof: VerifiedProof | undefined,
    certificate: CertificateSource,
  ): Promise<GrantPlan> {
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
    return grant(d, client, form, { ...(proof ? { proof } : {}), certificate });
  }

  /** Stores the plan (with the proof's jti, when not recorded yet) and answers. */
  async function store(planned: GrantPlan, jti?: JtiRow): Promise<TokenResponse> {
    const outcome = await persistPlan(d.db, planned, d, jti);
    if (outcome === 'stored') return planned.response;
    if (outcome === 'replayed') throw replayedProof();
    throw planned.refused ? await planned.refused(outcome) : new Error(`token plan not stored: ${outcome}`);
  }
}

export type TokenService = ReturnType<typeof createTokenService>;
