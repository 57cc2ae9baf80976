/**
 * Back from the consent UI: consume the consent verifier exactly once, store the consent session,
 * and answer the client with a code and/or tokens — all in one transaction (for `response_type=code`,
 * one statement), so a failure leaves the verifier unused. With `feature_flags.discard_skipped_consents`, a skipped consent leaves only its
 * id (until its verifier expires) instead of the full row, so it cannot be
 * reused.
 */
import type { Transaction } from 'kysely';
import { withTx } from '../../core/db/tx.ts';
import type { FlowState, HandledConsent } from '../flows/states.ts';
import { deniedError, oauth2Error } from '../oauth-errors.ts';
import {
  type ConsentFlow,
  insertConsentFlow,
  insertUsedConsent,
  isConsentUsed,
  isVerifierUsed,
  markVerifierUsed,
  storeConsentWithCode,
} from '../store/flows.ts';
import { codeValues } from '../store/tokens.ts';
import { obfuscateSubject } from '../subject.ts';
import type { Database } from '../tables.ts';
import type { Grant } from '../token/grant.ts';
import type { GrantSession } from '../token/session.ts';
import type { AuthorizeDeps, CookieJar } from './deps.ts';
import { checkCsrf, verifierExpiry } from './login-step.ts';
import type { AuthorizeRequest } from './request.ts';
import { type AuthorizeOutcome, toClient } from './respond.ts';

const alreadyUsed = () => oauth2Error('access_denied', { hint: 'The consent verifier has already been used.' });

/** The consent session row of a handled consent. */
function consentRow(d: AuthorizeDeps, s: FlowState, c: HandledConsent): ConsentFlow {
  const login = s.login;
  return {
    consentRequestId: s.consentRequestId,
    loginChallengeId: s.id,
    clientId: s.clientId,
    subject: s.subject,
    loginSessionId: s.sessionId,
    requestUrl: s.requestUrl,
    requestedScope: s.requestedScope,
    requestedAudience: s.requestedAudience,
    requestedAt: new Date(s.requestedAt * 1000),
    authenticatedAt: s.authTime ? new Date(s.authTime * 1000) : null,
    oidcContext: s.oidcContext as unknown as Record<string, unknown>,
    acr: login?.acr ?? '',
    amr: login?.amr ?? [],
    context: c.context ?? {},
    forceSubjectIdentifier: login?.forceSubjectIdentifier ?? '',
    consentSkip: s.consentSkip ?? false,
    grantedScope: c.grantScope,
    grantedAudience: c.grantAudience,
    remember: c.remember,
    rememberFor: c.rememberFor,
    handledAt: new Date(c.handledAt * 1000),
    expiresAt: c.rememberFor > 0 ? new Date((s.requestedAt + c.rememberFor) * 1000) : null,
    sessionData: d.sessions.seal(c.session),
  };
}

export async function persistConsent(trx: Transaction<Database>, d: AuthorizeDeps, s: FlowState, c: HandledConsent) {
  const flag = d.config.feature_flags.discard_skipped_consents;
  const id = s.consentRequestId;
  // The verifier cannot be used after this moment anyway, so the id need not be kept longer.
  const usedUntil = verifierExpiry(d, s);
  if (flag && s.consentSkip) {
    if ((await isConsentUsed(trx, id)) || !(await insertUsedConsent(trx, id, usedUntil))) throw alreadyUsed();
    return;
  }
  const stored = await insertConsentFlow(trx, consentRow(d, s, c));
  // With the flag on, also record the id: a replayed, now skippable flow must not slip through.
  if (!stored || (flag && !(await insertUsedConsent(trx, id, usedUntil)))) throw alreadyUsed();
}

export function grantOf(
  d: AuthorizeDeps,
  ar: Pick<AuthorizeRequest, 'client' | 'nonce' | 'dpopJkt'>,
  s: FlowState,
  c: HandledConsent,
): Grant {
  const login = s.login;
  const sub = obfuscateSubject(
    {
      supportedTypes: d.config.oidc.subject_identifiers.supported_types,
      salt: d.config.oidc.subject_identifiers.pairwise.salt,
    },
    ar.client,
    s.subject,
    login?.forceSubjectIdentifier ?? '',
  );
  const session: GrantSession = {
    subject: s.subject,
    idToken: {
      iss: d.config.urls.self.issuer,
      sub,
      aud: [ar.client.id],
      auth_time: s.authTime,
      rat: s.requestedAt,
      ...(login?.acr ? { acr: login.acr } : {}),
      ...(login?.amr.length ? { amr: login.amr } : {}),
      sid: s.sessionId,
      ...(ar.nonce ? { nonce: ar.nonce } : {}),
      extra: c.session.id_token,
    },
    ext: c.session.access_token,
    // RFC 9449 §10: the code is bound; the issuer binds (or unbinds) each token of it on its own.
    ...(ar.dpopJkt ? { cnf: { jkt: ar.dpopJkt } } : {}),
  };
  return {
    requestId: s.consentRequestId,
    client: ar.client,
    requestedScope: s.requestedScope,
    grantedScope: c.grantScope,
    requestedAudience: s.requestedAudience,
    grantedAudience: c.grantAudience,
    requestedAt: new Date(s.requestedAt * 1000),
    session,
  };
}

export async function finishConsent(
  d: AuthorizeDeps,
  ar: AuthorizeRequest,
  jar: CookieJar,
  verifier: string,
): Promise<AuthorizeOutcome> {
  const s = await d.codec.open('consent_verifier', verifier);
  if (s.clientId !== ar.client.id) {
    throw oauth2Error('invalid_client', { hint: 'The flow client id does not match the authorize request client id.' });
  }
  if (s.consentError) throw deniedError(s.consentError);
  const c = s.consent;
  if (!c || !s.login) throw oauth2Error('access_denied', { hint: 'The consent verifier has not been granted.' });
  const verifierId = `consent:${s.consentRequestId}`;
  try {
    await checkCsrf(d, jar, d.cookies.consentCsrfName(s.clientId), s.consentCsrf ?? '');
  } catch (e) {
    // The first use cleared the CSRF cookie: a replay is told what it is.
    if (await isVerifierUsed(d.db, verifierId)) throw alreadyUsed();
    throw e;
  }
  const grant = grantOf(d, ar, s, c);
  const types = ar.responseTypes;
  if (types.length === 1 && types[0] === 'code' && !d.config.feature_flags.discard_skipped_consents) {
    // The common case in one statement (verifier record, consent row, code row), atomic without a transaction.
    const code = d.issuer.mintAuthorizationCode(grant, {
      redirectUri: ar.params.redirect_uri ?? '',
      codeChallenge: ar.codeChallenge,
      codeChallengeMethod: ar.codeChallengeMethod,
    });
    const stored = await storeConsentWithCode(
      d.db,
      consentRow(d, s, c),
      { id: verifierId, expiresAt: verifierExpiry(d, s) },
      codeValues(code.row),
    );
    if (!stored) throw alreadyUsed();
    jar.clear(d.cookies.consentCsrfName(s.clientId));
    return toClient(d.config.urls.self.issuer, ar.redirectUri, ar.responseMode, {
      code: code.token,
      scope: grant.grantedScope.join(' '),
      state: ar.state,
    });
  }
  const outcome = await withTx(d.db, async (trx) => {
    await persistConsent(trx, d, s, c);
    // The used-verifier record outlives a revocation of the consent (which deletes the flow row).
    if (!(await markVerifierUsed(trx, `consent:${s.consentRequestId}`, verifierExpiry(d, s)))) throw alreadyUsed();
    const out: Record<string, string> = {};
    let code: string | undefined;
    let accessToken: string | undefined;
    if (types.includes('code')) {
      code = (
        await d.issuer.authorizationCode(trx, grant, {
          redirectUri: ar.params.redirect_uri ?? '',
          codeChallenge: ar.codeChallenge,
          codeChallengeMethod: ar.codeChallengeMethod,
        })
      ).token;
      out.code = code;
    }
    if (types.includes('token')) {
      const at = await d.issuer.accessToken(trx, grant, 'implicit');
      accessToken = at.token;
      out.access_token = at.token;
      out.token_type = 'bearer';
      out.expires_in = String(at.expiresIn);
    }
    if (types.includes('id_token') && grant.grantedScope.includes('openid')) {
      const bind = { ...(accessToken ? { accessToken } : {}), ...(code ? { code } : {}) };
      out.id_token = await d.issuer.idToken(grant, 'implicit', bind);
    }
    out.scope = grant.grantedScope.join(' ');
    out.state = ar.state;
    return toClient(d.config.urls.self.issuer, ar.redirectUri, ar.responseMode, out);
  });
  jar.clear(d.cookies.consentCsrfName(s.clientId));
  return outcome;
}
