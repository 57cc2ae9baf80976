/**
 * `GET /admin/audit/events`: audit events, newest first, with filters and Hydra's keyset paging
 * (`page_size`, `page_token`, `Link` header).
 *
 * Filters: `type` (repeatable or comma-separated), `actor` / `actor_kind`, `target` / `target_kind`,
 * `since` / `until` (RFC 3339 times; `since` inclusive, `until` exclusive).
 */
import type { Context } from 'koa';
import type { Config } from '../config/load.ts';
import { paginationSecrets } from '../config/load.ts';
import { keyRing } from '../crypto/keys.ts';
import type { Db } from '../db/tx.ts';
import { AppError, HERODOT } from '../errors.ts';
import { firstValue } from '../http/params.ts';
import type { Registrar } from '../http/routes.ts';
import { keysetPage, linkHeader, parsePageQuery } from '../pagination.ts';
import type { AuditType } from './events.ts';
import { listAuditEvents, type StoredAuditEvent } from './store.ts';

const PAGE_KIND = 'audit-events';

const bad = (description: string) => new AppError({ status: 400, code: HERODOT.badRequest, description });

const many = (v: string | string[] | undefined): string[] =>
  (Array.isArray(v) ? v : v ? [v] : [])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
function time(name: string, v: string | undefined): Date | undefined {
  if (v === undefined || v === '') return undefined;
  const d = new Date(v);
  if (!RFC3339.test(v) || Number.isNaN(d.getTime()))
    throw bad(`Parameter '${name}' must be an RFC 3339 date-time (e.g. 2026-01-31T12:00:00Z).`);
  return d;
}

export const renderAuditEvent = (e: StoredAuditEvent) => ({
  id: String(e.id),
  time: e.time.toISOString(),
  type: e.type,
  actor: { kind: e.actor_kind, id: e.actor_id },
  target: { kind: e.target_kind, id: e.target_id },
  outcome: e.outcome,
  request_id: e.request_id,
  trace_id: e.trace_id,
  details: e.details,
});

/** `types`: every audit event type of the program (the `type` filter refuses others). */
export function auditRoutes(
  router: Registrar,
  o: { db: Db; config: Config; now: () => Date; types: readonly AuditType[] },
): void {
  const ring = () => keyRing(paginationSecrets(o.config), 'pagination');
  router.get('/admin/audit/events', async function listAuditEventsHandler(ctx: Context) {
    const q = ctx.query;
    const types = many(q.type);
    const unknown = types.find((t) => !(o.types as readonly string[]).includes(t));
    if (unknown) throw bad(`Unknown audit event type '${unknown}'.`);
    const since = time('since', firstValue(q.since));
    const until = time('until', firstValue(q.until));
    const now = o.now();
    const page = await parsePageQuery(q, ring(), PAGE_KIND, now);
    const beforeId = page.after ? Number(page.after.id) : undefined;
    const rows = await listAuditEvents(o.db, {
      types,
      ...(firstValue(q.actor) !== undefined ? { actor: firstValue(q.actor) as string } : {}),
      ...(firstValue(q.actor_kind) !== undefined ? { actorKind: firstValue(q.actor_kind) as string } : {}),
      ...(firstValue(q.target) !== undefined ? { target: firstValue(q.target) as string } : {}),
      ...(firstValue(q.target_kind) !== undefined ? { targetKind: firstValue(q.target_kind) as string } : {}),
      ...(since ? { since } : {}),
      ...(until ? { until } : {}),
      ...(beforeId !== undefined && Number.isFinite(beforeId) ? { beforeId } : {}),
      limit: page.size + 1,
    });
    const p = await keysetPage(ring(), PAGE_KIND, page.size, rows, (last) => ({ id: last.id }), now);
    ctx.set('Link', linkHeader({ path: ctx.path, query: q, size: p.size, first: p.firstToken, next: p.nextToken }));
    ctx.body = p.items.map(renderAuditEvent);
  });
}
