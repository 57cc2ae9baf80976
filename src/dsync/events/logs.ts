/**
 * Webhook logs (Jackson `webhookLogs`, exposed as `/api/v1/dsync/events`).
 * When a directory has `log_webhook_events`, each real-time event has one log row, written
 * `pending` when the event is queued (in the change's transaction, store/events.ts and sql/0280)
 * and updated by every POST attempt; each batch POST (an array) has a row of its own. A row holds
 * the exact body of the last attempt (the stored event while pending), the status (`pending`,
 * `delivered`, `failed`), the status code (500 when no answer came, as Jackson), delivered (any
 * 2xx), the error (address-free, never the secret), the attempt number, when it was queued, when
 * the last attempt ended and how long it took. Nothing is recorded when the flag is off. Logs older than `dsync.webhook_logs_ttl`
 * are purged by the crontab task `dsync_webhook_logs_purge` in bounded batches.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../core/clock.ts';
import type { DirectoriesService } from '../directories/service.ts';
import { dsyncError } from '../errors.ts';
import * as store from '../store/webhook-logs.ts';
import type { Db, Executor } from '../tables.ts';
import { directoryIdOrNil, isUuid, type PageParams, page, type Scope, type ScopeQuery } from '../types.ts';
import type { WebhookAttempt } from './webhook.ts';

/**
 * Jackson's WebhookEventLog, plus `directory_id`, `event_id`, `status`, `error`, `attempt`,
 * `completed_at` and `duration_ms`. While pending: `status_code`, `completed_at` and `duration_ms`
 * are null and `attempt` is 0.
 */
export interface WebhookLogRecord {
  id: string;
  directory_id: string;
  /** The real-time event of this row; null for a batch POST or a row logged by the embedder. */
  event_id: string | null;
  webhook_endpoint: string;
  payload: unknown;
  status: 'pending' | 'delivered' | 'failed';
  status_code: number | null;
  delivered: boolean;
  error: string | null;
  attempt: number;
  created_at: string;
  completed_at: string | null;
  duration_ms: number | null;
}

const toRecord = (r: store.WebhookLogRow): WebhookLogRecord => ({
  id: r.id,
  directory_id: r.directory_id,
  event_id: r.event_id,
  webhook_endpoint: r.webhook_endpoint,
  payload: r.payload,
  // Rows written before sql/0280 have no status: each was one finished attempt.
  status: r.status ?? (r.delivered ? 'delivered' : 'failed'),
  status_code: r.status_code,
  delivered: r.delivered,
  error: r.error,
  attempt: r.attempt,
  created_at: r.created_at.toISOString(),
  completed_at: r.completed_at ? r.completed_at.toISOString() : null,
  duration_ms: r.duration_ms,
});

const logScope = (s: Scope): store.LogScope => ({
  tenant: s.tenant,
  product: s.product,
  ...(s.directoryId ? { directoryId: directoryIdOrNil(s.directoryId) } : {}),
});

/** Logs deleted per statement by the purge, and statements per run before it re-enqueues itself. */
export const PURGE_BATCH = 1000;
export const PURGE_BATCHES_PER_RUN = 50;

/**
 * The webhook logs of the directories: what delivery records, what an embedder logs itself, the
 * v1 API's reads and deletes, and the purge.
 * Long: every operation shares the directory scope check and the row mapping, which the closure binds.
 */
export function createWebhookLogsService(o: {
  db: Db;
  clock: Clock;
  directories: DirectoriesService;
  ttlMs: number;
  pageLimit?: number;
}) {
  /**
   * Records one attempt (the caller checked `log_webhook_events`, or that the event was logged when
   * it was queued): the row of `eventId` (a real-time event), or a row of its own (a batch POST).
   */
  async function record(
    exec: Executor,
    directoryId: string,
    endpoint: string,
    body: string,
    a: WebhookAttempt,
    attempt: number,
    eventId?: string,
  ): Promise<void> {
    await store.insertLog(exec, {
      id: randomUUID(),
      directoryId,
      eventId,
      endpoint,
      body,
      statusCode: a.status,
      delivered: a.delivered,
      error: a.error ?? null,
      attempt,
      createdAt: a.startedAt,
      completedAt: a.completedAt,
    });
  }

  /**
   * Jackson's `log(directory, event, status)`: records a delivery the embedder made itself (the
   * directory must be in the scope; 404 otherwise). `delivered` is true for a 2xx status (Jackson:
   * 200 only).
   */
  async function log(
    q: ScopeQuery,
    directory: { id?: unknown; webhook?: { endpoint?: unknown } } | undefined,
    payload: unknown,
    status: unknown,
  ): Promise<WebhookLogRecord> {
    const scope = await o.directories.resolveScope(q);
    const d = typeof directory?.id === 'string' ? await o.directories.load(directory.id) : undefined;
    if (!d || d.tenant !== scope.tenant || d.product !== scope.product)
      throw dsyncError(404, 'Directory configuration not found.');
    const code = Number.isInteger(status) ? (status as number) : 500;
    const now = o.clock.now();
    const row = {
      id: randomUUID(),
      directoryId: d.id,
      // Jackson logs the endpoint of the directory object it is given.
      endpoint: typeof directory?.webhook?.endpoint === 'string' ? directory.webhook.endpoint : d.webhook.endpoint,
      body: JSON.stringify(payload ?? null),
      statusCode: code,
      delivered: code >= 200 && code < 300,
      error: null,
      attempt: 1,
      createdAt: now,
      completedAt: now,
    };
    await store.insertLog(o.db, row);
    return {
      id: row.id,
      directory_id: row.directoryId,
      event_id: null,
      webhook_endpoint: row.endpoint,
      payload: payload ?? null,
      status: row.delivered ? 'delivered' : 'failed',
      status_code: row.statusCode,
      delivered: row.delivered,
      error: null,
      attempt: 1,
      created_at: now.toISOString(),
      completed_at: now.toISOString(),
      duration_ms: 0,
    };
  }

  /** Newest first, pages of at most 50 (Jackson's `getAll`). */
  async function list(q: ScopeQuery, p: PageParams = {}): Promise<WebhookLogRecord[]> {
    const scope = await o.directories.resolveScope(q);
    return (await store.listLogs(o.db, logScope(scope), page(p, o.pageLimit))).map(toRecord);
  }

  /** The log or null (Jackson's `get`). */
  async function get(q: ScopeQuery, id: unknown): Promise<WebhookLogRecord | null> {
    const scope = await o.directories.resolveScope(q);
    if (!isUuid(id)) return null;
    const r = await store.findLog(o.db, logScope(scope), id.toLowerCase());
    return r ? toRecord(r) : null;
  }

  /** Jackson's `delete(id)`: true when a log of the scope was deleted. */
  async function remove(q: ScopeQuery, id: unknown): Promise<boolean> {
    const scope = await o.directories.resolveScope(q);
    if (!isUuid(id)) return false;
    return store.deleteLog(o.db, logScope(scope), id.toLowerCase());
  }

  /** Jackson `deleteAll(directoryId)`; the directory must exist (404 otherwise). */
  async function deleteAll(directoryId: unknown): Promise<number> {
    const d = await o.directories.get(directoryId);
    return store.deleteDirectoryLogs(o.db, d.id);
  }

  /** Deletes logs older than the TTL, in bounded batches. Returns how many, and whether more remain. */
  async function purge(): Promise<{ deleted: number; more: boolean }> {
    const before = new Date(o.clock.now().getTime() - o.ttlMs);
    let deleted = 0;
    for (let i = 0; i < PURGE_BATCHES_PER_RUN; i++) {
      const n = await store.purgeLogs(o.db, before, PURGE_BATCH);
      deleted += n;
      if (n < PURGE_BATCH) return { deleted, more: false };
    }
    return { deleted, more: true };
  }

  return { record, log, list, get, remove, deleteAll, purge };
}

export type WebhookLogsService = ReturnType<typeof createWebhookLogsService>;
