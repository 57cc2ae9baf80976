/**
 * Logout (OpenID Connect RP-Initiated, Front- and Back-Channel Logout, as Hydra): the public endpoint `/oauth2/sessions/logout` (start, and completion with a
 * logout verifier) and the admin API for the logout UI (get, accept, reject). Requests live only in
 * their encrypted challenge and verifier (see challenge.ts): nothing is written until the session
 * is deleted, and that deletion (with the back-channel jobs, in the same transaction) is also what
 * makes a second use of the same verifier harmless: it finds no session and only redirects.
 */

import { withTx } from '../../core/db/tx.ts';
import { AppError } from '../../core/errors.ts';
import { hydraBody } from '../../core/http/errors.ts';
import type { CookieJar } from '../flows/cookies.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { rfc3339 } from '../sessions/schemas.ts';
import { deleteLoginSession } from '../store/sessions.ts';
import type { LogoutState } from './challenge.ts';
import { cookieSession, type LogoutDeps, type LogoutOutcome, redirect } from './deps.ts';
import { initiateLogout } from './initiate.ts';

const missingChallenge = () =>
  oauth2Error('invalid_request', { hint: "Query parameter 'challenge' is not defined but should have been." });

/** OAuth2LogoutRequest. */
export interface LogoutRequestView {
  challenge: string;
  subject: string;
  sid: string;
  request_url: string;
  rp_initiated: boolean;
  client: Record<string, unknown> | null;
  requested_at: string;
  expires_at: string;
}

export function createLogoutService(d: LogoutDeps) {
  const log = d.log.child({ component: 'logout' });

  async function open(challenge: string | undefined): Promise<LogoutState> {
    if (!challenge) throw missingChallenge();
    return d.codec.open('logout_challenge', challenge);
  }

  /** Hydra's completeLogout: check the verifier, end the session, notify the clients. */
  async function complete(verifier: string, jar: CookieJar): Promise<LogoutOutcome> {
    const lr = await d.codec.open('logout_verifier', verifier);
    const back = redirect(lr.postLogoutRedirectUri);
    if (!lr.rpInitiated) {
      // The browser must still hold the session the logout was asked for: a cookie that changed in
      // between (another login, a repeated submit) is left alone.
      const session = await cookieSession(d, jar);
      if (!session || session.subject !== lr.subject || session.id !== lr.sid) return back;
    }
    const ended = await withTx(d.db, async (trx) => {
      // No session: it ended already (a reused verifier, a revocation): nobody is notified twice.
      if (!(await deleteLoginSession(trx, lr.sid))) return undefined;
      await d.audit.record(trx, {
        type: 'oauth2.logout',
        actor: { kind: 'subject', id: lr.subject },
        target: { kind: 'session', id: lr.sid },
        details: { rp_initiated: lr.rpInitiated },
      });
      return d.channels.sessionsEnded(trx, [lr.sid]);
    });
    if (!ended) return back;
    jar.clear(d.cookies.sessionName, { path: d.config.serve.cookies.paths.session });
    log.info(
      { rpInitiated: lr.rpInitiated, frontchannel: ended.frontchannelUrls.length, backchannel: ended.backchannel },
      'logout completed',
    );
    if (!ended.frontchannelUrls.length) return back;
    return { kind: 'page', redirectTo: lr.postLogoutRedirectUri, frontchannelUrls: ended.frontchannelUrls };
  }

  return {
    /**
     * `GET|POST /oauth2/sessions/logout`. Never throws an AppError: errors send the browser to
     * `urls.error` with `error` and `error_description` (Hydra's forwardError).
     */
    async revokeOidcSession(
      params: Record<string, string>,
      verifier: string | undefined,
      requestUrl: string,
      jar: CookieJar,
    ): Promise<LogoutOutcome> {
      try {
        if (verifier) return await complete(verifier, jar);
        return await initiateLogout(d, params, requestUrl, jar);
      } catch (e) {
        if (!(e instanceof AppError)) throw e;
        const body = hydraBody(e, d.config.oauth2.expose_internal_errors);
        const u = new URL(d.config.urls.error);
        u.searchParams.set('error', body.error);
        u.searchParams.set('error_description', body.error_description);
        return { kind: 'redirect', location: u.toString(), aborted: { error: e.code, status: e.status } };
      }
    },

    /**
     * GET …/requests/logout. Answers the same for a request that was already accepted or even
     * completed (no handled state exists, so never 410). @throws 400 (no challenge), 401 `logout request expired`
     */
    async getLogoutRequest(challenge: string | undefined): Promise<LogoutRequestView> {
      const s = await open(challenge);
      const client = s.clientId ? await d.clients.get(s.clientId) : undefined;
      return {
        challenge: challenge as string,
        subject: s.subject,
        sid: s.sid,
        request_url: s.requestUrl,
        rp_initiated: s.rpInitiated,
        client: client?.wire ?? null,
        requested_at: rfc3339(new Date(s.requestedAt * 1000)),
        expires_at: rfc3339(new Date(s.expiresAt * 1000)),
      };
    },

    /** PUT …/logout/accept → `{redirect_to: <public>/oauth2/sessions/logout?logout_verifier=…}`. */
    async acceptLogoutRequest(challenge: string | undefined): Promise<{ redirect_to: string }> {
      const s = await open(challenge);
      // The verifier needs neither the client nor the request URL (which may hold a whole ID token).
      const verifier = await d.codec.seal('logout_verifier', { ...s, clientId: '', requestUrl: '' });
      const u = new URL('oauth2/sessions/logout', d.config.urls.self.public);
      u.searchParams.set('logout_verifier', verifier);
      return { redirect_to: u.toString() };
    },

    /** PUT …/logout/reject: only validates the challenge; nothing is stored (204). */
    async rejectLogoutRequest(challenge: string | undefined): Promise<void> {
      await open(challenge);
    },
  };
}

export type LogoutService = ReturnType<typeof createLogoutService>;
