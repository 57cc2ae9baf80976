/**
 * The login half of the browser flow (Hydra's requestAuthentication / verifyAuthentication) and the
 * hand-over to consent (requestConsent). Remembered logins are found through the encrypted session
 * cookie; `prompt=login`, `prompt=select_account` and `max_age` force the login screen.
 */
import { randomUUID } from 'node:crypto';
import { random, safeEqual } from '../../core/crypto/random.ts';
import type { CookieJar } from '../flows/cookies.ts';
import type { FlowState } from '../flows/states.ts';
import { deniedError, oauth2Error } from '../oauth-errors.ts';
import { isPublicClient } from '../ports.ts';
import { coversScopes, scopeStrategy, splitSpaces } from '../scope.ts';
import { confirmLogin, isVerifierUsed, markVerifierUsed } from '../store/flows.ts';
import { deleteLoginSession, findRememberedLoginSession, type LoginSession } from '../store/sessions.ts';
import { obfuscateSubject } from '../subject.ts';
import { DEFAULT_NETWORK_ID as DEFAULT_NID } from '../tables.ts';
import { checkClaimsAgainstLogin } from './checks/claims.ts';
import { forcesLogin } from './checks/oidc.ts';
import { isLocalhost } from './checks/redirect-uri.ts';
import { type AuthorizeDeps, unixNow } from './deps.ts';
import { hintSubject, idTokenHintClaims } from './id-token-hint.ts';
import type { AuthorizeRequest } from './request.ts';
import { type AuthorizeOutcome, toUi } from './respond.ts';

const randomId = () => random(16).toString('hex');
const subjectConfig = (d: AuthorizeDeps) => ({
  supportedTypes: d.config.oidc.subject_identifiers.supported_types,
  salt: d.config.oidc.subject_identifiers.pairwise.salt,
});

async function rememberedSession(d: AuthorizeDeps, ar: AuthorizeRequest, jar: CookieJar) {
  const sid = await d.cookies.openSession(jar.get(d.cookies.sessionName));
  if (!sid) return undefined;
  const session = await findRememberedLoginSession(d.db, sid, d.clock.now());
  if (!session) return undefined;
  if (ar.maxAge > -1 && session.authenticatedAt.getTime() + ar.maxAge * 1000 < d.clock.now().getTime()) {
    if (ar.prompt.includes('none')) {
      throw oauth2Error('login_required', {
        hint: "Request failed because prompt is set to 'none' and authentication time reached 'max_age'.",
      });
    }
    return undefined;
  }
  const hint = ar.params.id_token_hint;
  if (hint) {
    const sub = hintSubject(await idTokenHintClaims(d.keys, hint));
    if (sub !== session.subject && sub !== obfuscateSubject(subjectConfig(d), ar.client, session.subject)) {
      throw oauth2Error('login_required', {
        hint: 'Request failed because subject claim from id_token_hint does not match subject from authentication session.',
      });
    }
  }
  return session;
}

/** No verifier yet: find a remembered login (or not) and send the browser to the login UI. */
export async function startLogin(
  d: AuthorizeDeps,
  ar: AuthorizeRequest,
  jar: CookieJar,
  requestUrl: string,
  extra: Pick<FlowState, 'device'> = {},
): Promise<AuthorizeOutcome> {
  const session: LoginSession | undefined = forcesLogin(ar.prompt) ? undefined : await rememberedSession(d, ar, jar);
  if (ar.prompt.includes('none') && !session) {
    throw oauth2Error('login_required', {
      hint: "Prompt 'none' was requested, but no existing login session was found.",
    });
  }
  const hint = ar.params.id_token_hint ? await idTokenHintClaims(d.keys, ar.params.id_token_hint) : {};
  const csrf = randomId();
  const state: FlowState = {
    nid: DEFAULT_NID,
    id: randomId(),
    consentRequestId: randomId(),
    clientId: ar.client.id,
    requestUrl,
    requestedScope: ar.scope,
    requestedAudience: ar.audience,
    requestedAt: unixNow(d),
    loginSkip: !!session,
    subject: session?.subject ?? '',
    sessionId: session?.id ?? randomUUID(),
    authTime: session ? Math.floor(session.authenticatedAt.getTime() / 1000) : 0,
    oidcContext: {
      acr_values: splitSpaces(ar.params.acr_values),
      ui_locales: splitSpaces(ar.params.ui_locales),
      ...(ar.params.display ? { display: ar.params.display } : {}),
      ...(ar.params.login_hint ? { login_hint: ar.params.login_hint } : {}),
      id_token_hint_claims: hint,
      ...(ar.claims ? { claims: ar.claims } : {}),
    },
    loginCsrf: csrf,
    ...extra,
  };
  jar.set(d.cookies.loginCsrfName(ar.client.id), await d.cookies.sealCsrf(csrf), {
    maxAgeMs: d.config.ttl.login_consent_request,
  });
  const ui = ar.prompt.includes('registration') ? d.config.urls.registration : d.config.urls.login;
  const query: Record<string, string> = { login_challenge: await d.codec.seal('login_challenge', state) };
  if (ar.params.identity_schema) query.identity_schema = ar.params.identity_schema;
  return toUi(ui, query);
}

/** When a verifier of the flow stops being valid anyway (its used-record may go then); 1 min of clock skew. */
export const verifierExpiry = (d: AuthorizeDeps, s: FlowState) =>
  new Date(s.requestedAt * 1000 + d.config.ttl.login_consent_request + 60_000);

/** The CSRF cookie set with the challenge must come back with the verifier (403 otherwise). */
export async function checkCsrf(d: AuthorizeDeps, jar: CookieJar, name: string, expected: string): Promise<void> {
  const raw = jar.get(name);
  const value = await d.cookies.openCsrf(raw);
  if (!value) {
    throw oauth2Error('request_forbidden', {
      hint: raw ? 'CSRF session cookie could not be decoded.' : 'No CSRF value available in the session cookie.',
    });
  }
  if (!safeEqual(value, expected)) {
    throw oauth2Error('request_forbidden', {
      hint: 'The CSRF value from the token does not match the CSRF value from the data store.',
    });
  }
}

async function revokeCookieSession(d: AuthorizeDeps, jar: CookieJar): Promise<void> {
  const sid = await d.cookies.openSession(jar.get(d.cookies.sessionName));
  jar.clear(d.cookies.sessionName, { path: d.config.serve.cookies.paths.session });
  if (sid) await deleteLoginSession(d.db, sid);
}

/** OpenID Connect prompt rules re-checked against the accepted login (fosite's ValidatePrompt). */
async function validatePrompt(d: AuthorizeDeps, ar: AuthorizeRequest, s: FlowState, sub: string): Promise<void> {
  if (ar.maxAge > 0 && s.authTime + ar.maxAge < s.requestedAt) {
    throw oauth2Error('login_required', {
      debug: 'Failed to validate OpenID Connect request because authentication time does not satisfy max_age time.',
    });
  }
  if (ar.prompt.includes('none') && s.authTime > s.requestedAt) {
    throw oauth2Error('login_required', {
      hint: "Failed to validate OpenID Connect request because prompt was set to 'none' but auth_time happened after the authorization request was registered, indicating that the user was logged in during this request which is not allowed.",
    });
  }
  if (forcesLogin(ar.prompt) && s.authTime < s.requestedAt) {
    throw oauth2Error('login_required', {
      hint: "Failed to validate OpenID Connect request because prompt was set to 'login' but auth_time happened before the authorization request was registered, indicating that the user was not re-authenticated which is forbidden.",
    });
  }
  checkClaimsAgainstLogin(ar.claims, sub, s.login?.acr ?? '');
  if (ar.params.id_token_hint && hintSubject(await idTokenHintClaims(d.keys, ar.params.id_token_hint)) !== sub) {
    throw oauth2Error('login_required', {
      hint: "Failed to validate OpenID Connect request because the subject from provided id token from id_token_hint does not match the current session's subject.",
    });
  }
}

/**
 * Back from the login UI: check the verifier, record the login session, go to the consent UI. The
 * writes and the remembered-consent read are one statement (confirmLogin); the used-verifier read
 * happens only on the error paths, to tell a replay what it is.
 */
export async function afterLogin(
  d: AuthorizeDeps,
  ar: AuthorizeRequest,
  jar: CookieJar,
  verifier: string,
): Promise<AuthorizeOutcome> {
  const s = await d.codec.open('login_verifier', verifier);
  if (s.loginError) throw deniedError(s.loginError);
  if (s.clientId !== ar.client.id) {
    throw oauth2Error('invalid_client', { hint: 'The flow client id does not match the authorize request client id.' });
  }
  const used = () => oauth2Error('access_denied', { hint: 'The login verifier has already been used.' });
  const verifierId = `login:${s.id}`;
  try {
    await checkCsrf(d, jar, d.cookies.loginCsrfName(s.clientId), s.loginCsrf);
  } catch (e) {
    // The first use cleared the CSRF cookie: a replay is told what it is.
    if (await isVerifierUsed(d.db, verifierId)) throw used();
    throw e;
  }
  const login = s.login;
  if (!login) throw oauth2Error('access_denied', { hint: 'The login verifier has not been granted.' });
  const sub = obfuscateSubject(subjectConfig(d), ar.client, s.subject, login.forceSubjectIdentifier);
  try {
    await validatePrompt(d, ar, s, sub);
  } catch (e) {
    // Usable once, whatever happened to the session since (a revoked session must stay revoked).
    if (!(await markVerifierUsed(d.db, verifierId, verifierExpiry(d, s)))) throw used();
    jar.clear(d.cookies.loginCsrfName(s.clientId));
    if ((e as { code?: string }).code === 'login_required') await revokeCookieSession(d, jar);
    throw e;
  }
  const ttl = d.config.ttl.authentication_session;
  const rememberMs = login.rememberFor > 0 ? Math.min(login.rememberFor * 1000, ttl) : ttl;
  const rule = consentSkipRule(ar, s);
  const confirmed = await confirmLogin(d.db, {
    verifier: { id: verifierId, expiresAt: verifierExpiry(d, s) },
    session: s.loginSkip
      ? undefined
      : {
          id: s.sessionId,
          subject: s.subject,
          authenticatedAt: new Date(s.authTime * 1000),
          remember: login.remember,
          expiresAt: new Date(d.clock.now().getTime() + rememberMs),
          identityProviderSessionId: login.identityProviderSessionId,
        },
    consentOf: rule === 'remembered' ? { clientId: ar.client.id, subject: s.subject, now: d.clock.now() } : undefined,
  });
  if (!confirmed.fresh) throw used();
  jar.clear(d.cookies.loginCsrfName(s.clientId));
  if (!s.loginSkip && !login.remember) await revokeCookieSession(d, jar);
  if (login.remember && (!s.loginSkip || login.extendSessionLifespan)) {
    const maxAgeMs = login.rememberFor > 0 ? login.rememberFor * 1000 : ttl;
    jar.set(d.cookies.sessionName, await d.cookies.sealSession(s.sessionId, maxAgeMs), {
      maxAgeMs,
      path: d.config.serve.cookies.paths.session,
    });
  }
  const skip =
    rule === 'remembered'
      ? !!confirmed.rememberedScope &&
        coversScopes(scopeStrategy(d.config.strategies.scope), confirmed.rememberedScope, s.requestedScope)
      : rule;
  return requestConsent(d, ar, jar, s, skip);
}

/** Whether the consent screen may be skipped: decided by the request and client, or by a remembered consent. */
function consentSkipRule(ar: AuthorizeRequest, s: FlowState): boolean | 'remembered' {
  if (ar.prompt.includes('consent')) return false;
  // A public client's device cannot prove who it is: its user always confirms (Hydra).
  if (s.device && isPublicClient(ar.client)) return false;
  if (isPublicClient(ar.client) && !s.device) {
    // RFC 6749 §10.2: without proof of the client's identity, do not reuse an earlier approval.
    const u = new URL(ar.redirectUri);
    if (!(u.protocol === 'https:' || (u.protocol === 'http:' && isLocalhost(u)))) return false;
  }
  // gatehouse applies `skip_consent` server-side: such clients are trusted, their consent is skipped.
  if (ar.client.skipConsent) return true;
  return 'remembered';
}

async function requestConsent(
  d: AuthorizeDeps,
  ar: AuthorizeRequest,
  jar: CookieJar,
  s: FlowState,
  skip: boolean,
): Promise<AuthorizeOutcome> {
  if (ar.prompt.includes('none') && !skip) {
    throw oauth2Error('consent_required', { hint: "Prompt 'none' was requested, but no previous consent was found." });
  }
  const csrf = randomId();
  const next: FlowState = { ...s, consentSkip: skip, consentCsrf: csrf };
  jar.set(d.cookies.consentCsrfName(ar.client.id), await d.cookies.sealCsrf(csrf), {
    maxAgeMs: d.config.ttl.login_consent_request,
  });
  return toUi(d.config.urls.consent, { consent_challenge: await d.codec.seal('consent_challenge', next) });
}
