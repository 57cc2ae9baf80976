/** Admin login/consent API bodies (Hydra's AcceptOAuth2LoginRequest, AcceptOAuth2ConsentRequest, RejectOAuth2Request) and views. */
import { z } from 'zod';
import type { FlowClient } from '../ports.ts';
import type { FlowState } from './states.ts';

/**
 * Go's encoding/json leaves a JSON null where a string goes at the string's zero value, so
 * `"grant_scope": [null]` decodes to `[""]`: Ory's reference consent app sends exactly that when no
 * scope box is ticked (its `[req.body.grant_scope]` of an absent field, serialised).
 */
const goString = z
  .string()
  .nullable()
  .transform((v) => v ?? '');
const strings = z
  .array(goString)
  .nullish()
  .transform((v) => v ?? []);
const claims = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? {});
/** Go's zero values for an absent or null boolean / string / integer. */
const flag = z.boolean().nullish().transform(Boolean);
const text = z
  .string()
  .nullish()
  .transform((v) => v ?? '');
const int = z
  .number()
  .int()
  .nullish()
  .transform((v) => v ?? 0);

export const acceptLoginBody = z.object({
  subject: text,
  remember: flag,
  remember_for: int,
  extend_session_lifespan: flag,
  acr: text,
  amr: strings,
  context: z.unknown().optional(),
  force_subject_identifier: text,
  identity_provider_session_id: text,
});
export type AcceptLoginBody = z.output<typeof acceptLoginBody>;

export const acceptConsentBody = z.object({
  grant_scope: strings,
  grant_access_token_audience: strings,
  remember: flag,
  remember_for: int,
  session: z
    .object({ access_token: claims, id_token: claims })
    .nullish()
    .transform((v) => v ?? { access_token: {}, id_token: {} }),
  context: z.unknown().optional(),
});
export type AcceptConsentBody = z.output<typeof acceptConsentBody>;

export const rejectBody = z.object({
  error: text,
  error_description: text,
  error_hint: text,
  error_debug: text,
  status_code: int,
});
export type RejectBody = z.output<typeof rejectBody>;

function oidcContextView(s: FlowState) {
  const o = s.oidcContext;
  return {
    acr_values: o.acr_values,
    ui_locales: o.ui_locales,
    ...(o.display ? { display: o.display } : {}),
    id_token_hint_claims: o.id_token_hint_claims,
    ...(o.login_hint ? { login_hint: o.login_hint } : {}),
    ...(o.claims ? { claims: o.claims } : {}),
  };
}

/** OAuth2LoginRequest. */
export function loginRequestView(challenge: string, s: FlowState, client: FlowClient) {
  return {
    challenge,
    requested_scope: s.requestedScope,
    requested_access_token_audience: s.requestedAudience,
    skip: s.loginSkip,
    subject: s.subject,
    oidc_context: oidcContextView(s),
    client: client.wire,
    request_url: s.requestUrl,
    session_id: s.sessionId,
  };
}

/** OAuth2ConsentRequest (`challenge` is empty inside a consent session). */
export function consentRequestView(challenge: string, s: FlowState, client: FlowClient | undefined) {
  return {
    challenge,
    consent_request_id: s.consentRequestId,
    requested_scope: s.requestedScope,
    requested_access_token_audience: s.requestedAudience,
    skip: s.consentSkip ?? false,
    subject: s.subject,
    oidc_context: oidcContextView(s),
    client: client?.wire ?? null,
    request_url: s.requestUrl,
    login_challenge: s.id,
    login_session_id: s.sessionId,
    acr: s.login?.acr ?? '',
    amr: s.login?.amr ?? [],
    context: s.login?.context ?? {},
  };
}
