/**
 * Audit events: typed records of what an auditor asks about (who changed a client, who logged in,
 * which directory changed which user …). `Audit.record(exec, event)` (one `Audit` per process, from
 * `createAudit`) is the one way to record one:
 *
 * - it always adds the event to the active trace span (a no-op when tracing is off);
 * - with `audit.enabled` it inserts a row into `audit_events` through `exec`, which is the caller's
 *   transaction: the row commits with the change or not at all.
 *
 * The request id, the trace id and (unless given) the actor come from the current work scope
 * (src/core/observability/scope.ts). Every event passes the log sanitiser (src/core/log.ts) before it
 * is recorded anywhere, so no secret, token or IP address ends up in an audit event.
 */
import { trace } from '@opentelemetry/api';
import { type Selectable, sql } from 'kysely';
import type { AuditEventsTable } from '../db/schema.ts';
import type { Executor } from '../db/tx.ts';
import { sanitizeLogValue } from '../log.ts';
import { metrics } from '../observability/metrics.ts';
import { type Actor, currentScope, scopeActor } from '../observability/scope.ts';

/**
 * The audit event types, `<domain>.<what>`: the core names none. Each domain lists its own in its
 * audit.ts (the list its face exports) and adds the same names to this interface by declaration
 * merging (`declare module`), so that every call site's `type` is checked; the composition root
 * joins the lists (`auditCatalogue`) for the routes that filter by type. docs/observability.md
 * lists each with its target and details.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging, one domain at a time
export interface AuditTypes {}
export type AuditType = keyof AuditTypes & string;

/** The program's audit event types, from the lists of the faces; a type listed twice is a mistake. */
export function auditCatalogue(...lists: ReadonlyArray<readonly AuditType[]>): readonly AuditType[] {
  const all = lists.flat();
  const twice = all.find((t, i) => all.indexOf(t) !== i);
  if (twice) throw new Error(`audit event type ${twice} is declared twice`);
  return all;
}

export interface AuditTarget {
  /** `client`, `key_set`, `login_request`, `consent`, `grant`, `subject`, `trust`, `directory`, `user`, `group`, `job`. */
  kind: string;
  id?: string;
}

export type AuditDetails = Record<string, string | number | boolean | string[] | null | undefined>;

export interface AuditEvent {
  type: AuditType;
  target: AuditTarget;
  outcome?: 'success' | 'failure';
  /** Defaults to the actor of the current scope (admin API caller, SCIM directory, job). */
  actor?: Actor;
  details?: AuditDetails;
}

/** The columns of an `audit_events` row that `Audit.record` writes (the database adds id and time). */
export type AuditRow = Omit<Selectable<AuditEventsTable>, 'id' | 'time' | 'type'> & { type: AuditType };

/** The event as it is recorded: scope filled in, sanitised. */
export function auditRow(e: AuditEvent): AuditRow {
  const scope = currentScope();
  const actor = e.actor ?? scopeActor();
  const span = trace.getActiveSpan();
  const details: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e.details ?? {})) if (v !== undefined) details[k] = v;
  // An event about someone else (a login accepted for its subject) still names who made the call.
  const caller = scope?.caller;
  if (caller && (caller.kind !== actor.kind || caller.id !== actor.id))
    details.caller = `${caller.kind}:${caller.id ?? ''}`;
  const row = {
    type: e.type,
    actor_kind: actor.kind,
    actor_id: actor.id ?? '',
    target_kind: e.target.kind,
    target_id: e.target.id ?? '',
    outcome: e.outcome ?? 'success',
    request_id: scope?.requestId ?? '',
    trace_id: span?.isRecording() ? span.spanContext().traceId : '',
    details,
  };
  // The log rules: secret-bearing keys and token-shaped text redacted, IP addresses removed.
  return sanitizeLogValue(row) as AuditRow;
}

/**
 * How the process records audit events, built once by the composition root from `audit.enabled`
 * and handed to every service that records one: nothing reads a process-wide switch.
 */
export interface Audit {
  /** True when `record` writes a row through the executor it is given. */
  recordsRows(): boolean;
  /** Records one event: a span event always; a row in `exec`'s transaction when `recordsRows()`. */
  record(exec: Executor, e: AuditEvent): Promise<void>;
}

export function createAudit(o: { enabled: boolean }): Audit {
  const rows = o.enabled;
  return {
    recordsRows: () => rows,
    async record(exec, e) {
      metrics.auditEvents.inc({ type: e.type });
      const span = trace.getActiveSpan();
      const recording = span?.isRecording() ?? false;
      // The row (scope, sanitising) is built only when something records it.
      if (!recording && !rows) return;
      const row = auditRow(e);
      if (recording) {
        span?.addEvent(`audit ${row.type}`, {
          'audit.type': row.type,
          'audit.actor.kind': row.actor_kind,
          'audit.actor.id': row.actor_id,
          'audit.target.kind': row.target_kind,
          'audit.target.id': row.target_id,
          'audit.outcome': row.outcome,
          'audit.request_id': row.request_id,
        });
      }
      if (!rows) return;
      await sql`insert into audit_events
        (type, actor_kind, actor_id, target_kind, target_id, outcome, request_id, trace_id, details)
        values (${row.type}, ${row.actor_kind}, ${row.actor_id}, ${row.target_kind}, ${row.target_id},
          ${row.outcome}, ${row.request_id}, ${row.trace_id}, ${JSON.stringify(row.details)}::jsonb)`.execute(exec);
    },
  };
}
