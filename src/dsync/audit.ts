/**
 * Directory sync's audit event types (docs/observability.md lists each with its target and
 * details). The face exports the list; the names join the core's `AuditTypes` below, so that every
 * `audit(exec, { type })` of the domain is checked against them.
 */
export const DSYNC_AUDIT_TYPES = [
  'dsync.directory.created',
  'dsync.directory.changed',
  'dsync.directory.deleted',
  'dsync.scim.change',
  'dsync.webhook.failed_permanently',
  'dsync.setup_link.used',
] as const;

declare module '../core/audit/events.ts' {
  interface AuditTypes extends Record<(typeof DSYNC_AUDIT_TYPES)[number], true> {}
}
