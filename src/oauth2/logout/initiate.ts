/**
 * The start of a logout at `GET|POST /oauth2/sessions/logout` (Hydra's issueLogoutVerifier):
 * - without `id_token_hint` (OP-initiated): the browser's session cookie names the session; no
 *   session means there is nobody to log out, so the browser goes straight to
 *   `urls.post_logout_redirect`; `state` and `post_logout_redirect_uri` are refused;
 * - with `id_token_hint` (RP-initiated): an ID token gatehouse issued (signature checked, expiry
 *   ignored) names the session (`sid`) and the client (`aud`); `post_logout_redirect_uri` must be
 *   one of that client's `post_logout_redirect_uris` exactly, and `state` is added to it. When the
 *   session is not (or no longer) remembered, the browser goes straight to the redirect.
 * Otherwise the browser is sent to `urls.logout` with a self-contained logout challenge.
 */

import { idTokenHintClaims } from '../authorize/id-token-hint.ts';
import { isUsableUri } from '../clients/uri-policy.ts';
import type { CookieJar } from '../flows/cookies.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { FlowClient } from '../ports.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID } from '../tables.ts';
import type { LogoutState } from './challenge.ts';
import type { LogoutDeps, LogoutOutcome } from './deps.ts';
import { cookieSession, redirect } from './deps.ts';

const invalid = (hint: string) => oauth2Error('invalid_request', { hint: `Logout failed because ${hint}` });

async function challengeOutcome(
  d: LogoutDeps,
  s: Omit<LogoutState, 'nid' | 'requestedAt' | 'expiresAt'>,
): Promise<LogoutOutcome> {
  const now = Math.floor(d.clock.now().getTime() / 1000);
  const state: LogoutState = {
    nid: DEFAULT_NID,
    ...s,
    requestedAt: now,
    expiresAt: now + Math.floor(d.config.ttl.login_consent_request / 1000),
  };
  const u = new URL(d.config.urls.logout);
  u.searchParams.set('logout_challenge', await d.codec.seal('logout_challenge', state));
  return redirect(u.toString());
}

async function hintedClient(d: LogoutDeps, aud: unknown): Promise<FlowClient> {
  const audiences = (Array.isArray(aud) ? aud : [aud]).filter((a): a is string => typeof a === 'string' && a !== '');
  for (const a of audiences) {
    const c = await d.clients.get(a);
    if (c) return c;
  }
  throw invalid('none of the listed audiences is a registered OAuth 2.0 Client.');
}

/** The post-logout URL of an RP-initiated logout: the registered URI, exactly, plus `state`. */
function rpRedirect(d: LogoutDeps, client: FlowClient, requested: string, state: string): string {
  if (!requested) return d.config.urls.post_logout_redirect;
  if (
    !client.postLogoutRedirectUris.includes(requested) ||
    // Checked again at use: a row stored before the scheme rules may hold a script URL.
    !isUsableUri(requested, 'redirect', d.config.dev)
  ) {
    throw invalid(
      'query parameter post_logout_redirect_uri is not a whitelisted as a post_logout_redirect_uri for the client.',
    );
  }
  const u = new URL(requested);
  if (state) u.searchParams.set('state', state);
  return u.toString();
}

export async function initiateLogout(
  d: LogoutDeps,
  params: Record<string, string>,
  requestUrl: string,
  jar: CookieJar,
): Promise<LogoutOutcome> {
  const hint = params.id_token_hint ?? '';
  const state = params.state ?? '';
  const requested = params.post_logout_redirect_uri ?? '';
  if (!hint) {
    if (state) throw invalid('query parameter state is set but id_token_hint is missing.');
    if (requested) throw invalid('query parameter post_logout_redirect_uri is set but id_token_hint is missing.');
    const session = await cookieSession(d, jar);
    // Nobody to log out: no client can be told either.
    if (!session) return redirect(d.config.urls.post_logout_redirect);
    return challengeOutcome(d, {
      subject: session.subject,
      sid: session.id,
      requestUrl,
      rpInitiated: false,
      clientId: '',
      postLogoutRedirectUri: d.config.urls.post_logout_redirect,
    });
  }
  const claims = await idTokenHintClaims(d.keys, hint);
  const issuer = d.config.urls.self.issuer;
  if (claims.iss !== issuer) {
    throw invalid(
      `issuer claim value '${String(claims.iss ?? '')}' from query parameter id_token_hint does not match with issuer value from configuration '${issuer}'.`,
    );
  }
  const now = Math.floor(d.clock.now().getTime() / 1000);
  if (typeof claims.iat !== 'number' || claims.iat > now) {
    throw invalid(
      `iat claim value '${String(claims.iat ?? 0)}' from query parameter id_token_hint is before now ('${now}').`,
    );
  }
  const sid = typeof claims.sid === 'string' ? claims.sid : '';
  if (!sid) throw invalid('query parameter id_token_hint is missing sid claim.');
  if (typeof claims.sub !== 'string' || !claims.sub)
    throw invalid('query parameter id_token_hint is missing sub claim.');
  const client = await hintedClient(d, claims.aud);
  const to = rpRedirect(d, client, requested, state);
  const session = await cookieSession(d, undefined, sid);
  if (!session) return redirect(to); // already logged out (or never remembered): nothing to end
  return challengeOutcome(d, {
    subject: session.subject,
    sid,
    requestUrl,
    rpInitiated: true,
    clientId: client.id,
    postLogoutRedirectUri: to,
  });
}
