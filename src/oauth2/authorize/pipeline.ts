/**
 * Validation of `/oauth2/auth` requests, in fosite's order. Errors before the redirect URI is known
 * to be registered go to `urls.error`; after that to the client. Checks Hydra runs only after the
 * login and consent screens (PKCE, prompt values, nonce) run here, before any screen is shown.
 */

import type { ClientOutbound } from '../client-keys.ts';
import type { OAuth2Config } from '../deps.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { type ClientPort, type FlowClient, isPublicClient } from '../ports.ts';
import { allowedResources } from '../resource.ts';
import { firstDisallowedAudience, scopeStrategy, splitSpaces } from '../scope.ts';
import { parseClaimsRequest } from './checks/claims.ts';
import { checkNonce, checkState, parseMaxAge, parsePrompt } from './checks/oidc.ts';
import { checkPkceRequest } from './checks/pkce.ts';
import { checkRedirectSecure, isLocalhost, resolveRedirectUri } from './checks/redirect-uri.ts';
import {
  checkResponseGrants,
  checkResponseTypes,
  effectiveResponseMode,
  parseResponseMode,
} from './checks/response.ts';
import type { AuthorizeRequest, ErrorTarget } from './request.ts';
import { applyRequestObject } from './request-object.ts';

export interface PipelineDeps {
  config: OAuth2Config;
  outbound: ClientOutbound;
  clients: ClientPort;
  now: () => Date;
}

function checkScopeAndAudience(d: PipelineDeps, client: FlowClient, scope: string[], audience: string[]): void {
  const strategy = scopeStrategy(d.config.strategies.scope);
  const allowedScope = splitSpaces(client.scope);
  for (const s of scope) {
    if (!strategy(allowedScope, s)) {
      throw oauth2Error('invalid_scope', { hint: `The OAuth 2.0 Client is not allowed to request scope '${s}'.` });
    }
  }
  const bad = firstDisallowedAudience(client.audience, audience);
  if (bad !== undefined) {
    throw oauth2Error('invalid_request', {
      hint: `Requested audience '${bad}' has not been whitelisted by the OAuth 2.0 Client.`,
    });
  }
}

/** A public client may not use prompt=none with a redirect URI that does not prove its identity. */
function checkPublicPromptNone(d: PipelineDeps, client: FlowClient, prompt: string[], redirectUri: string): void {
  if (!isPublicClient(client) || !prompt.includes('none') || d.config.dev) return;
  const u = new URL(redirectUri);
  if (!(u.protocol === 'https:' || (u.protocol === 'http:' && isLocalhost(u)))) {
    throw oauth2Error('consent_required', {
      hint: "OAuth 2.0 Client is marked public and redirect uri is not considered secure (https missing), but 'prompt=none' was requested.",
    });
  }
}

/**
 * Client, request object and redirect URI: the part after which errors may go to the client.
 * Fills `target` as it learns where errors can be sent.
 */
async function resolveTarget(d: PipelineDeps, input: Record<string, string>, target: ErrorTarget) {
  target.state = input.state ?? '';
  const client = input.client_id ? await d.clients.get(input.client_id) : undefined;
  if (!client) throw oauth2Error('invalid_client', { hint: 'The requested OAuth 2.0 Client does not exist.' });
  const params = await applyRequestObject(d.outbound, client, input, d.now(), d.config.serve.limits.request_object);
  target.state = params.state ?? '';
  const givenMode = parseResponseMode(params.response_mode);
  if (givenMode) target.responseMode = givenMode;
  const scope = splitSpaces(params.scope);
  const redirectUri = resolveRedirectUri(client, params.redirect_uri ?? '', scope);
  target.redirectUri = redirectUri;
  // Until the response types are known, errors use the mode a `code` request would.
  if (!givenMode) target.responseMode = splitSpaces(params.response_type).join(' ') === 'code' ? 'query' : 'fragment';
  return { client, params, givenMode, scope, redirectUri };
}

export async function validateAuthorizeRequest(
  d: PipelineDeps,
  input: Record<string, string>,
  target: ErrorTarget,
): Promise<AuthorizeRequest> {
  const { client, params, givenMode, scope, redirectUri } = await resolveTarget(d, input, target);
  const asked = splitSpaces(params.audience);
  checkScopeAndAudience(d, client, scope, asked);
  // RFC 8707: resources are requested audiences, refused with invalid_target.
  const audience = [...new Set([...asked, ...allowedResources(client, params.resource)])];
  if (params.registration) throw oauth2Error('registration_not_supported');
  const responseTypes = checkResponseTypes(client, params.response_type);
  const responseMode = effectiveResponseMode(responseTypes, givenMode);
  target.responseMode = responseMode;
  checkState(params.state ?? '');

  checkRedirectSecure(redirectUri, d.config.dev);
  checkResponseGrants(client, responseTypes);
  const nonce = params.nonce ?? '';
  checkNonce(nonce, responseTypes);
  const prompt = parsePrompt(params.prompt);
  checkPublicPromptNone(d, client, prompt, redirectUri);
  const maxAge = parseMaxAge(params.max_age);
  const claims = parseClaimsRequest(params.claims);
  const dpopJkt = params.dpop_jkt;
  if (dpopJkt !== undefined && !/^[A-Za-z0-9_-]{43}$/.test(dpopJkt)) {
    throw oauth2Error('invalid_request', {
      hint: "Parameter 'dpop_jkt' must be the base64url SHA-256 thumbprint of a JWK (RFC 9449 §10).",
    });
  }
  const pkcePolicy = {
    enforced: d.config.oauth2.pkce.enforced,
    enforcedForPublicClients: d.config.oauth2.pkce.enforced_for_public_clients,
    allowPlain: d.config.oauth2.pkce.allow_plain,
  };
  const pkce = responseTypes.includes('code')
    ? checkPkceRequest(
        pkcePolicy,
        isPublicClient(client),
        params.code_challenge ?? '',
        params.code_challenge_method ?? '',
      )
    : { codeChallenge: '', codeChallengeMethod: '' };
  const state = params.state ?? '';
  return {
    client,
    params,
    redirectUri,
    responseTypes,
    responseMode,
    scope,
    audience,
    state,
    nonce,
    prompt,
    maxAge,
    ...pkce,
    ...(claims ? { claims } : {}),
    ...(dpopJkt && d.config.oauth2.dpop.enabled ? { dpopJkt } : {}),
  };
}
