/** One-line metric hooks of the token endpoint (bounded labels: grant type, token format, auth method). */
import { metrics } from './metrics.ts';

const GRANT_LABELS: Record<string, string> = {
  authorization_code: 'authorization_code',
  refresh_token: 'refresh_token',
  client_credentials: 'client_credentials',
  'urn:ietf:params:oauth:grant-type:jwt-bearer': 'jwt_bearer',
  'urn:ietf:params:oauth:grant-type:device_code': 'device_code',
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
