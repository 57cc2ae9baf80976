/**
 * The admin side of the headless login/consent model: read a challenge, accept or reject it. Each
 * answer is a new verifier appended to the original authorization URL (`redirect_to`). Nothing is
 * written here but the audit event; the verifier carries the result back through the browser.
 */
import type { Audit } from '../../core/audit/events.ts';
import type { Clock } from '../../core/clock.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { ClientPort } from '../ports.ts';
import { isConsentUsed } from '../store/flows.ts';
import type { Executor } from '../tables.ts';
import { challengeNotFound, type FlowCodec } from './challenge.ts';
import {
  type AcceptConsentBody,
  type AcceptLoginBody,
  consentRequestView,
  loginRequestView,
  type RejectBody,
} from './schemas.ts';
import type { DeniedRequest, FlowState } from './states.ts';

export interface FlowsDeps {
  db: Executor;
  clock: Clock;
  codec: FlowCodec;
  clients: ClientPort;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
}

export type RedirectTo = { redirect_to: string };
/** A 410 Gone answer: the request was already handled. */
export type Gone = { gone: true; redirect_to: string };

const missingChallenge = () =>
  oauth2Error('invalid_request', { hint: "Query parameter 'challenge' is not defined but should have been." });

function withParam(url: string, key: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set(key, value);
  return u.toString();
}

function denied(body: RejectBody, defaultName: string): DeniedRequest {
  return {
    error: body.error || defaultName,
    error_description: body.error_description,
    error_hint: body.error_hint,
    error_debug: body.error_debug,
    status_code: body.status_code || 400,
  };
}

export function createFlowsService(d: FlowsDeps) {
  const nowSec = () => Math.floor(d.clock.now().getTime() / 1000);

  async function open(kind: 'login_challenge' | 'consent_challenge', challenge: string | undefined) {
    if (!challenge) throw missingChallenge();
    return d.codec.open(kind, challenge);
  }

  async function client(s: FlowState) {
    const c = await d.clients.get(s.clientId);
    if (!c) throw challengeNotFound();
    return c;
  }

  return {
    /** GET …/requests/login. Throws 400 (no challenge), 404 (undecryptable), 401 (expired). */
    async getLoginRequest(challenge: string | undefined) {
      const s = await open('login_challenge', challenge);
      return loginRequestView(challenge as string, s, await client(s));
    },

    /** PUT …/login/accept. A skipped login accepted for another subject forces a fresh login. */
    async acceptLogin(challenge: string | undefined, body: AcceptLoginBody): Promise<RedirectTo> {
      if (!challenge) throw missingChallenge();
      if (!body.subject) throw oauth2Error('invalid_request', { hint: "Field 'subject' must not be empty." });
      const s = await open('login_challenge', challenge);
      if (s.subject && body.subject !== s.subject) return { redirect_to: withParam(s.requestUrl, 'prompt', 'login') };
      const next: FlowState = {
        ...s,
        subject: body.subject,
        authTime: s.loginSkip ? s.authTime : nowSec(),
        login: {
          // A skipped login stays remembered, so that consecutive calls work as the same user.
          remember: s.loginSkip ? true : body.remember,
          rememberFor: body.remember_for,
          extendSessionLifespan: body.extend_session_lifespan,
          acr: body.acr,
          amr: body.amr,
          context: body.context ?? {},
          forceSubjectIdentifier: body.force_subject_identifier,
          identityProviderSessionId: body.identity_provider_session_id,
        },
      };
      delete next.loginError;
      await d.audit.record(d.db, {
        type: 'oauth2.login.accepted',
        actor: { kind: 'subject', id: body.subject },
        target: { kind: 'client', id: s.clientId },
        details: { remember: next.login?.remember ?? false, skipped: !!s.loginSkip },
      });
      return { redirect_to: withParam(s.requestUrl, 'login_verifier', await d.codec.seal('login_verifier', next)) };
    },

    /** PUT …/login/reject (default error "login request denied"). */
    async rejectLogin(challenge: string | undefined, body: RejectBody): Promise<RedirectTo> {
      const s = await open('login_challenge', challenge);
      const next: FlowState = { ...s, subject: '', authTime: 0, loginError: denied(body, 'login request denied') };
      delete next.login;
      await d.audit.record(d.db, {
        type: 'oauth2.login.rejected',
        target: { kind: 'client', id: s.clientId },
        outcome: 'failure',
        details: { error: next.loginError?.error },
      });
      return { redirect_to: withParam(s.requestUrl, 'login_verifier', await d.codec.seal('login_verifier', next)) };
    },

    /** GET …/requests/consent; 410 once its verifier was consumed. */
    async getConsentRequest(challenge: string | undefined) {
      const s = await open('consent_challenge', challenge);
      if (await isConsentUsed(d.db, s.consentRequestId)) return { gone: true, redirect_to: s.requestUrl } as Gone;
      return consentRequestView(challenge as string, s, await client(s));
    },

    /** PUT …/consent/accept. Granted scope and audience are not checked against the request (Hydra). */
    async acceptConsent(challenge: string | undefined, body: AcceptConsentBody): Promise<RedirectTo> {
      const s = await open('consent_challenge', challenge);
      const next: FlowState = {
        ...s,
        consent: {
          grantScope: body.grant_scope,
          grantAudience: body.grant_access_token_audience,
          remember: body.remember,
          rememberFor: body.remember_for,
          session: body.session,
          context: body.context === undefined ? (s.login?.context ?? {}) : body.context,
          handledAt: nowSec(),
        },
      };
      delete next.consentError;
      await d.audit.record(d.db, {
        type: 'oauth2.consent.granted',
        actor: { kind: 'subject', id: s.subject },
        target: { kind: 'client', id: s.clientId },
        details: { scope: body.grant_scope, remember: body.remember },
      });
      return { redirect_to: withParam(s.requestUrl, 'consent_verifier', await d.codec.seal('consent_verifier', next)) };
    },

    /** PUT …/consent/reject (default error "consent request denied"). */
    async rejectConsent(challenge: string | undefined, body: RejectBody): Promise<RedirectTo> {
      const s = await open('consent_challenge', challenge);
      const next: FlowState = { ...s, consentError: denied(body, 'consent request denied') };
      delete next.consent;
      await d.audit.record(d.db, {
        type: 'oauth2.consent.rejected',
        actor: { kind: 'subject', id: s.subject },
        target: { kind: 'client', id: s.clientId },
        outcome: 'failure',
        details: { error: next.consentError?.error },
      });
      return { redirect_to: withParam(s.requestUrl, 'consent_verifier', await d.codec.seal('consent_verifier', next)) };
    },
  };
}

export type FlowsService = ReturnType<typeof createFlowsService>;
