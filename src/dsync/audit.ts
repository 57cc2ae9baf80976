/**
 * Directory sync's audit event types (docs/observability.md lists each with its target and
 * details). The face exports the list; the composition root adds the names to the core's
 * `AuditTypes`, so that every `audit.record(exec, { type })` is checked against them.
 */
export const DSYNC_AUDIT_TYPES = [
  'dsync.directory.created',
  'dsync.directory.changed',
  'dsync.directory.deleted',
  'dsync.scim.change',
  'dsync.webhook.failed_permanently',
  'dsync.setup_link.used',
] as const;
