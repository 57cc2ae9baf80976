/**
 * `grant_type=client_credentials` (RFC 6749 §4.4), as fosite and Hydra run it: every requested
 * scope must be allowed by the client under the scope strategy (`invalid_scope`), every requested
 * audience by the client's `audience` (`invalid_request`); public clients get `invalid_grant`;
 * the client needs the grant type (`unauthorized_client`). With
 * `oauth2.client_credentials.default_grant_allowed_scope` and no `scope`, all client scopes are
 * granted. `sub` is the client id; no refresh token and no ID token.
 */

import { randomUUID } from 'node:crypto';
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, type FlowClient, isPublicClient } from '../../ports.ts';
import { allowedResources } from '../../resource.ts';
import { firstDisallowedAudience, scopeStrategy, splitSpaces } from '../../scope.ts';
import { boundTo, type Possession } from '../binding.ts';
import type { GrantSession } from '../session.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';

/** The session of a token issued to a machine (no end user, no ID token claims). */
export function machineSession(
  d: GrantDeps,
  subject: string,
  machine: NonNullable<GrantSession['machine']>,
): GrantSession {
  return {
    subject,
    machine,
    idToken: { iss: d.config.urls.self.issuer, sub: subject, aud: [], auth_time: 0, rat: 0, extra: {} },
    ext: {},
  };
}

/** `audience` may be repeated or space separated (the form handler joins repeats with spaces). */
export const requestedAudienceOf = (form: Record<string, string>) => splitSpaces(form.audience);

export async function clientCredentialsGrant(
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  held: Possession,
): Promise<GrantPlan> {
  const strategy = scopeStrategy(d.config.strategies.scope);
  const clientScopes = splitSpaces(client.scope);
  const requested = splitSpaces(form.scope);
  for (const s of requested) {
    if (!strategy(clientScopes, s)) {
      throw oauth2Error('invalid_scope', { hint: `The OAuth 2.0 Client is not allowed to request scope '${s}'.` });
    }
  }
  const asked = requestedAudienceOf(form);
  const bad = firstDisallowedAudience(client.audience, asked);
  if (bad !== undefined) {
    throw oauth2Error('invalid_request', {
      hint: `Requested audience '${bad}' has not been whitelisted by the OAuth 2.0 Client.`,
    });
  }
  const audience = [...new Set([...asked, ...allowedResources(client, form.resource)])];
  if (isPublicClient(client)) {
    throw oauth2Error('invalid_grant', {
      hint: "The OAuth 2.0 Client is marked as public and is thus not allowed to use authorization grant 'client_credentials'.",
    });
  }
  if (!clientGrantTypes(client).includes('client_credentials')) {
    throw oauth2Error('unauthorized_client', {
      hint: "The OAuth 2.0 Client is not allowed to use authorization grant 'client_credentials'.",
    });
  }
  const granted =
    requested.length === 0 && d.config.oauth2.client_credentials.default_grant_allowed_scope ? clientScopes : requested;
  return d.issuer.planTokens(
    {
      requestId: randomUUID(),
      client,
      requestedScope: requested,
      grantedScope: granted,
      requestedAudience: audience,
      grantedAudience: audience,
      requestedAt: d.clock.now(),
      session: machineSession(d, client.id, 'client_credentials'),
      ...boundTo(client, held),
    },
    'client_credentials',
  );
}
