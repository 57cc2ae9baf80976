/**
 * `grant_type=urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693), for clients registered
 * with that grant. Hydra has none (ory/hydra#1218).
 *
 * Subject tokens: an access token gatehouse issued (`…:token-type:access_token`), active, issued to
 * the exchanging client or naming it in its audience, and — when DPoP-bound — exchanged with a proof
 * of its key (when certificate-bound, RFC 8705, over a connection with its certificate); or a JWT from a trusted JWT-bearer issuer (`…:token-type:jwt`), checked as a JWT
 * bearer assertion (signature by the trusted key, `aud` the token endpoint, lifetime).
 * Without `actor_token` the new token impersonates the subject (`sub` is the subject's); with one it
 * is delegated (§1.1): `act` names the actor, and the subject token's own `act` (earlier actors)
 * nests inside it (§4.1). A subject token's `may_act` (§4.4) limits who may act for it.
 * Scope: a subset of the subject token's (default: those of it the client may hold), within the
 * client's; audience: the `audience` and `resource` values the client's audience list allows
 * (`invalid_target` otherwise).
 * The answer is an access token (`issued_token_type` access_token, no refresh token), issued and
 * audited as any other grant (the token hook sees grant type token_exchange).
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../../core/errors.ts';
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, type FlowClient } from '../../ports.ts';
import { allowedResources } from '../../resource.ts';
import { firstDisallowedAudience, scopeStrategy, splitSpaces } from '../../scope.ts';
import { boundTo, type Possession } from '../binding.ts';
import type { GrantSession } from '../session.ts';
import { requestedAudienceOf } from './client-credentials.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';
import { checkAssertionClaims, parseAssertion, verifyAssertion } from './jwt-bearer-checks.ts';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

/** What a presented token says about who it is for and what it may do. */
interface PresentedParty {
  /** The subject as the new token names it (`sub`). */
  sub: string;
  /** The scopes it carries; undefined for a trusted JWT (the trust relationship's scopes apply). */
  scope: string[];
  /** Its own `act` (earlier actors) and `may_act`, when it has them. */
  act?: Record<string, unknown>;
  mayAct?: Record<string, unknown>;
}

/** RFC 8693 §2.2.2: an unusable subject or actor token is `invalid_request`. */
const refused = (hint: string) => oauth2Error('invalid_request', { hint });

async function gatehouseToken(
  d: GrantDeps,
  client: FlowClient,
  token: string,
  what: 'subject_token' | 'actor_token',
  held: Possession,
): Promise<PresentedParty> {
  const found = await d.lookup.find(token, false);
  const row = found?.use === 'access_token' ? found.row : undefined;
  if (!row || (row.expiresAt && row.expiresAt.getTime() <= d.clock.now().getTime()))
    throw refused(`The ${what} is not an active access token of this server.`);
  const session = d.sessions.open<GrantSession>(row.sessionData);
  if (what === 'subject_token' && row.clientId !== client.id && !row.grantedAudience.includes(client.id))
    throw refused('The subject_token was neither issued to this client nor names it in its audience.');
  const cnf = session.cnf;
  if (cnf?.jkt && held.proof?.jkt !== cnf.jkt)
    throw refused(`The ${what} is DPoP-bound: the request needs a DPoP proof of its key.`);
  // RFC 8705 §3: a certificate-bound token is presented only over a connection with that certificate.
  if (cnf?.['x5t#S256'] && held.certificate()?.thumbprint !== cnf['x5t#S256'])
    throw refused(`The ${what} is certificate-bound: the request needs the TLS client certificate it is bound to.`);
  const ext = session.ext ?? {};
  const obj = (v: unknown) => (v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined);
  const act = session.act ?? obj(ext.act);
  const mayAct = obj(ext.may_act);
  return {
    sub: row.subject,
    scope: row.grantedScope,
    ...(act ? { act } : {}),
    ...(mayAct ? { mayAct } : {}),
  };
}

async function trustedJwt(d: GrantDeps, token: string, what: string): Promise<PresentedParty & { allowed: string[] }> {
  try {
    const { header, claims: unverified } = parseAssertion(token);
    const key = await verifyAssertion(d, token, header, unverified.iss as string, unverified.sub as string);
    const claims = await checkAssertionClaims(d, unverified);
    const obj = (v: unknown) => (v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined);
    const act = obj(unverified.act);
    const mayAct = obj(unverified.may_act);
    const scope = splitSpaces(typeof unverified.scope === 'string' ? unverified.scope : undefined);
    return {
      sub: claims.sub,
      scope,
      allowed: key.issuer.scope,
      ...(act ? { act } : {}),
      ...(mayAct ? { mayAct } : {}),
    };
  } catch (e) {
    if (e instanceof AppError)
      throw refused(`The ${what} is not a JWT of a trusted issuer: ${e.hint ?? e.description}`);
    throw e;
  }
}

export async function tokenExchangeGrant(
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  held: Possession,
): Promise<GrantPlan> {
  if (!clientGrantTypes(client).includes(TOKEN_EXCHANGE_GRANT)) {
    throw oauth2Error('unauthorized_client', {
      hint: `The OAuth 2.0 Client is not allowed to use authorization grant "${TOKEN_EXCHANGE_GRANT}".`,
    });
  }
  const subjectToken = form.subject_token ?? '';
  const subjectType = form.subject_token_type ?? '';
  if (!subjectToken || !subjectType) throw refused("Parameters 'subject_token' and 'subject_token_type' are required.");
  if (form.requested_token_type && form.requested_token_type !== ACCESS_TOKEN_TYPE)
    throw refused(`Only '${ACCESS_TOKEN_TYPE}' can be requested.`);
  const party = (token: string, type: string, what: 'subject_token' | 'actor_token') => {
    if (type === ACCESS_TOKEN_TYPE) return gatehouseToken(d, client, token, what, held);
    if (type === JWT_TYPE) return trustedJwt(d, token, what);
    throw refused(`The ${what}_type '${type}' is not supported (use '${ACCESS_TOKEN_TYPE}' or '${JWT_TYPE}').`);
  };
  const subject = await party(subjectToken, subjectType, 'subject_token');
  const actorToken = form.actor_token ?? '';
  if (!actorToken !== !form.actor_token_type)
    throw refused("Parameters 'actor_token' and 'actor_token_type' go together.");
  const actor = actorToken ? await party(actorToken, form.actor_token_type ?? '', 'actor_token') : undefined;
  if (actor && subject.mayAct && subject.mayAct.sub !== actor.sub)
    throw refused("The actor is not the one the subject_token's 'may_act' allows.");

  // Scopes: what the subject token carries (a trusted JWT: what its trust relationship allows), within the client's.
  const strategy = scopeStrategy(d.config.strategies.scope);
  const ceiling = 'allowed' in subject ? (subject.allowed as string[]) : subject.scope;
  const clientScope = splitSpaces(client.scope);
  // No `scope`: the subject token's scopes that this client may hold.
  const requested =
    form.scope !== undefined ? splitSpaces(form.scope) : subject.scope.filter((s) => strategy(clientScope, s));
  for (const s of requested) {
    if (!strategy(ceiling, s) || !strategy(clientScope, s))
      throw oauth2Error('invalid_scope', { hint: `The exchanged token may not carry scope '${s}'.` });
  }
  const asked = requestedAudienceOf(form);
  const bad = firstDisallowedAudience(client.audience, asked);
  if (bad !== undefined)
    throw oauth2Error('invalid_target', { hint: `The OAuth 2.0 Client may not ask for audience '${bad}'.` });
  const audience = [...new Set([...asked, ...allowedResources(client, form.resource)])];
  // The subject's token, never a machine's: no `machine` marker, so it is no admin API credential.
  const session: GrantSession = {
    subject: subject.sub,
    idToken: { iss: d.config.urls.self.issuer, sub: subject.sub, aud: [], auth_time: 0, rat: 0, extra: {} },
    ext: {},
  };
  // §4.1: the current actor outermost, earlier ones (the subject token's act) nested inside.
  if (actor) session.act = { sub: actor.sub, ...(subject.act ? { act: subject.act } : {}) };
  else if (subject.act) session.act = subject.act;
  const plan = await d.issuer.planTokens(
    {
      requestId: randomUUID(),
      client,
      requestedScope: requested,
      grantedScope: requested,
      requestedAudience: audience,
      grantedAudience: audience,
      requestedAt: d.clock.now(),
      session,
      ...boundTo(client, held),
    },
    'token_exchange',
  );
  return { ...plan, response: { ...plan.response, issued_token_type: ACCESS_TOKEN_TYPE } };
}
