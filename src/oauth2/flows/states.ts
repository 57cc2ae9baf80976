/**
 * The login → consent flow as it travels inside challenges and verifiers (self-contained, encrypted;
 * no row exists until the consent verifier is consumed).
 *
 *   GET /oauth2/auth ──▶ login_challenge ──(accept|reject)──▶ login_verifier
 *        ▲                                                         │ GET /oauth2/auth?…&login_verifier
 *        │                                                         ▼
 *        │                      consent_challenge ◀── login session confirmed, CSRF checked
 *        │                             │ (accept|reject)
 *        │                             ▼
 *        └── GET /oauth2/auth?…&consent_verifier ──▶ consent row written once (PK on the
 *                                                    consent request id) ──▶ code / tokens
 *
 * A reject at either step carries the error in the verifier; the browser is sent to the client with
 * it. Each token kind has its own `typ`, so a login challenge is never accepted as a verifier.
 */
import type { ClaimsRequest } from '../authorize/checks/claims.ts';

export type FlowTokenKind = 'login_challenge' | 'login_verifier' | 'consent_challenge' | 'consent_verifier';

export interface OidcContext {
  acr_values: string[];
  ui_locales: string[];
  display?: string;
  login_hint?: string;
  id_token_hint_claims: Record<string, unknown>;
  /** The `claims` request parameter (OpenID Connect Core §5.5), when given. */
  claims?: ClaimsRequest;
}

/** RejectOAuth2Request, with Hydra's defaults applied. */
export interface DeniedRequest {
  error: string;
  error_description: string;
  error_hint: string;
  error_debug: string;
  status_code: number;
}

export interface HandledLogin {
  remember: boolean;
  rememberFor: number;
  extendSessionLifespan: boolean;
  acr: string;
  amr: string[];
  context: unknown;
  forceSubjectIdentifier: string;
  identityProviderSessionId: string;
}

export interface HandledConsent {
  grantScope: string[];
  grantAudience: string[];
  remember: boolean;
  rememberFor: number;
  session: { access_token: Record<string, unknown>; id_token: Record<string, unknown> };
  context: unknown;
  /** unix seconds */
  handledAt: number;
}

export interface FlowState {
  nid: string;
  /** The login challenge id. */
  id: string;
  /** The consent request id, fixed when the flow starts: replaying a login verifier cannot mint a second one. */
  consentRequestId: string;
  clientId: string;
  requestUrl: string;
  requestedScope: string[];
  requestedAudience: string[];
  /** unix seconds */
  requestedAt: number;
  loginSkip: boolean;
  subject: string;
  /** Login session id (`sid`). */
  sessionId: string;
  /** unix seconds; 0 until the login is accepted (or the remembered session's time when skipped). */
  authTime: number;
  oidcContext: OidcContext;
  loginCsrf: string;
  login?: HandledLogin;
  loginError?: DeniedRequest;
  consentSkip?: boolean;
  consentCsrf?: string;
  consent?: HandledConsent;
  consentError?: DeniedRequest;
  /** Set when the flow authorizes a device (RFC 8628): the device code's signature. */
  device?: { signature: string };
}
