/**
 * The OAuth 2.0 domain's metrics (label values are bounded: grant types, token formats, methods).
 * The face exports the family; the composition root registers it and adds its names to the core's
 * `Metrics`, so call sites record with `metrics.<name>` (core/observability/metrics.ts).
 */
import { counter } from '../core/observability/metrics.ts';

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
