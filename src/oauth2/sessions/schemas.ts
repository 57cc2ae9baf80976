/** OAuth2ConsentSession, as listed by `GET /admin/oauth2/auth/sessions/consent`. */
import type { FlowClient } from '../ports.ts';
import type { SessionCodec } from '../session-data.ts';
import type { ConsentFlow } from '../store/flows.ts';

/** RFC 3339 UTC without fractional seconds, as Hydra prints it. */
export const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

type Claims = { access_token?: Record<string, unknown>; id_token?: Record<string, unknown> };

export function consentSessionView(f: ConsentFlow, client: FlowClient | undefined, sessions: SessionCodec) {
  const session = sessions.open<Claims>(f.sessionData);
  const oidc = f.oidcContext as Record<string, unknown>;
  return {
    consent_request_id: f.consentRequestId,
    grant_scope: f.grantedScope,
    grant_access_token_audience: f.grantedAudience,
    session: { access_token: session.access_token ?? {}, id_token: session.id_token ?? {} },
    remember: f.remember,
    remember_for: f.rememberFor,
    handled_at: rfc3339(f.handledAt),
    context: f.context ?? {},
    consent_request: {
      challenge: '',
      consent_request_id: f.consentRequestId,
      requested_scope: f.requestedScope,
      requested_access_token_audience: f.requestedAudience,
      skip: f.consentSkip,
      subject: f.subject,
      oidc_context: { acr_values: [], ui_locales: [], id_token_hint_claims: {}, ...oidc },
      client: client?.wire ?? null,
      request_url: f.requestUrl,
      login_challenge: f.loginChallengeId,
      login_session_id: f.loginSessionId,
      acr: f.acr,
      amr: f.amr,
      context: f.context ?? {},
    },
  };
}
