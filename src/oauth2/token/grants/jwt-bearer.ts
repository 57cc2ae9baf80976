/**
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1) against the trusted
 * issuers of `/admin/trust/grants/jwt-bearer/issuers`. The client is
 * always authenticated first (the token service does that) and needs the grant type.
 *
 * Scopes: every requested scope must be allowed by the trust relationship (`invalid_scope`); of
 * those, the ones the client's `scope` allows are granted (as Hydra). Audience: the assertion's
 * `aud` values plus the requested audiences the client allows (v26.2.0). `sub` is the assertion's
 * subject. Lifespan `jwt_bearer_grant_access_token_lifespan` or `ttl.access_token`; no refresh
 * token, no ID token. The assertion's `jti` is recorded until its `exp`, so it works once.
 */

import { randomUUID } from 'node:crypto';
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, type FlowClient } from '../../ports.ts';
import { allowedResources } from '../../resource.ts';
import { firstDisallowedAudience, scopeStrategy, splitSpaces } from '../../scope.ts';
import { insertJti } from '../../store/tokens.ts';
import { boundTo, type Possession } from '../binding.ts';
import { JWT_BEARER_GRANT } from '../grant.ts';
import { machineSession, requestedAudienceOf } from './client-credentials.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';
import { checkAssertionClaims, jtiHash, parseAssertion, verifyAssertion } from './jwt-bearer-checks.ts';

export async function jwtBearerGrant(
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  held: Possession,
): Promise<GrantPlan> {
  if (!clientGrantTypes(client).includes(JWT_BEARER_GRANT)) {
    throw oauth2Error('unauthorized_client', {
      hint: `The OAuth 2.0 Client is not allowed to use authorization grant "${JWT_BEARER_GRANT}".`,
    });
  }
  const assertion = form.assertion ?? '';
  if (!assertion) {
    throw oauth2Error('invalid_request', {
      hint: `The assertion request parameter must be set when using grant_type of '${JWT_BEARER_GRANT}'.`,
    });
  }
  const { header, claims: unverified } = parseAssertion(assertion);
  const key = await verifyAssertion(d, assertion, header, unverified.iss as string, unverified.sub as string);
  const claims = await checkAssertionClaims(d, unverified);

  const strategy = scopeStrategy(d.config.strategies.scope);
  const requested = splitSpaces(form.scope);
  for (const s of requested) {
    if (!strategy(key.issuer.scope, s)) {
      throw oauth2Error('invalid_scope', {
        hint: `The public key registered for issuer "${claims.iss}" and subject "${claims.sub}" is not allowed to request scope "${s}".`,
      });
    }
  }
  if (claims.jti) {
    const exp = new Date(claims.exp * 1000);
    // Lost a race with a concurrent use of the same assertion: that is a replay too.
    if (!(await insertJti(d.db, jtiHash(claims.jti), exp, d.clock.now()))) throw oauth2Error('jti_known');
  }
  const clientScopes = splitSpaces(client.scope);
  const requestedAudience = requestedAudienceOf(form);
  const audience = [
    ...new Set([
      ...claims.aud,
      ...requestedAudience.filter((a) => firstDisallowedAudience(client.audience, [a]) === undefined),
      ...allowedResources(client, form.resource),
    ]),
  ];
  return d.issuer.planTokens(
    {
      requestId: randomUUID(),
      client,
      requestedScope: requested,
      grantedScope: requested.filter((s) => strategy(clientScopes, s)),
      requestedAudience,
      grantedAudience: audience,
      requestedAt: d.clock.now(),
      session: machineSession(d, claims.sub, 'jwt_bearer'),
      ...boundTo(client, held),
    },
    'jwt_bearer',
    { assertion: [assertion] },
  );
}
