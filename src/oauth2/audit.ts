/**
 * The OAuth 2.0 domain's audit event types (docs/observability.md lists each with its target and
 * details). The face exports the list; the composition root adds the names to the core's
 * `AuditTypes`, so that every `audit.record(exec, { type })` is checked against them.
 */
export const OAUTH2_AUDIT_TYPES = [
  'oauth2.client.created',
  'oauth2.client.updated',
  'oauth2.client.deleted',
  'oauth2.client.secret_rotated',
  'oauth2.jwk.set_changed',
  'oauth2.login.accepted',
  'oauth2.login.rejected',
  'oauth2.consent.granted',
  'oauth2.consent.rejected',
  'oauth2.consent.revoked',
  'oauth2.tokens.issued',
  'oauth2.tokens.refreshed',
  'oauth2.tokens.revoked',
  'oauth2.refresh_token.reuse_detected',
  'oauth2.logout',
  'oauth2.sessions.revoked',
  'oauth2.trust.changed',
] as const;
