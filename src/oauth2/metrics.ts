/**
 * The OAuth 2.0 domain's metrics (label values are bounded: grant types, token formats, methods).
 * The face exports the family; the composition root registers it and adds its names to the core's
 * `Metrics`, so call sites record with `metrics.<name>` (core/observability/metrics.ts).
 */
import { counter, metrics } from '../core/observability/metrics.ts';

export const oauth2Metrics = {
  /** Tokens the token endpoint issued, by grant type and access-token format (opaque, jwt). */
  tokensIssued: counter({
    name: 'gatehouse_oauth2_tokens_issued_total',
    help: 'Token responses issued by the token endpoint, by grant type and access token format.',
    labelNames: ['grant', 'format'] as const,
  }),
  clientAuthFailures: counter({
    name: 'gatehouse_oauth2_client_authentication_failures_total',
    help: 'Failed client authentications at the token endpoint, by the method the request used.',
    labelNames: ['method'] as const,
  }),
  refreshReuse: counter({
    name: 'gatehouse_oauth2_refresh_token_reuse_total',
    help: 'Refresh tokens presented again after rotation (the grant is revoked).',
  }),
};

// ---- the token endpoint's one-line hooks --------------------------------------------------------

const GRANT_LABELS: Record<string, string> = {
  authorization_code: 'authorization_code',
  refresh_token: 'refresh_token',
  client_credentials: 'client_credentials',
  'urn:ietf:params:oauth:grant-type:jwt-bearer': 'jwt_bearer',
  'urn:ietf:params:oauth:grant-type:device_code': 'device_code',
  'urn:ietf:params:oauth:grant-type:token-exchange': 'token_exchange',
};

/** Counts a successful token response by grant and access-token format; returns it unchanged. */
export function countTokenResponse<T extends { access_token: string }>(form: Record<string, string>, response: T): T {
  const grant = GRANT_LABELS[(form.grant_type ?? '').trim()] ?? 'other';
  metrics.tokensIssued.inc({ grant, format: response.access_token.startsWith('ory_at_') ? 'opaque' : 'jwt' });
  return response;
}

/** The client authentication method a request used (RFC 6749 §2.3, RFC 7523 §2.2). */
export function presentedAuthMethod(form: Record<string, string>, authorization: string | undefined): string {
  if (form.client_assertion || form.client_assertion_type) return 'private_key_jwt';
  if (authorization && /^basic\s/i.test(authorization)) return 'client_secret_basic';
  if (form.client_secret) return 'client_secret_post';
  return 'none';
}

/** A `.catch` handler: counts an `invalid_client` failure by method and rethrows. */
export function countClientAuthFailure(form: Record<string, string>, authorization: string | undefined) {
  return (e: unknown): never => {
    if ((e as { code?: string } | null)?.code === 'invalid_client' || (e as { status?: number } | null)?.status === 401)
      metrics.clientAuthFailures.inc({ method: presentedAuthMethod(form, authorization) });
    throw e;
  };
}
