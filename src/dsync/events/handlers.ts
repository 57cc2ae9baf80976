/**
 * The events API (`/api/v1/dsync/{id}/events`, `/api/v1/dsync/events/feed`), `/api/v1/dsync/events` (webhook logs, Jackson pages/api/v1/dsync/events/{index,[eventId]}.ts),
 * `/api/v1/dsync/cron/process-events` (batch mode) and `/api/v1/dsync/webhooks/retry`.
 */

import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import { allow, bodyObject, pageParams, param, scopeParams } from '../v1-handlers.ts';
import type { BatchService } from './batch.ts';
import type { EventFeedService } from './feed.ts';
import type { WebhookLogsService } from './logs.ts';
import type { RetryService } from './retry.ts';

/**
 * The events API (events/feed.ts): `GET /api/v1/dsync/{directoryId}/events?after&limit` and
 * `GET /api/v1/dsync/events/feed?tenant&product&after&limit` → `{data, cursor, has_more}`.
 */
export function feedRoutes(r: Registrar, s: { feed: EventFeedService }): void {
  r.get('/events/feed', async (ctx: Context) => {
    const { tenant, product } = scopeParams(ctx);
    ctx.body = await s.feed.list({ tenant, product }, param(ctx, 'after'), param(ctx, 'limit'));
  });
  allow(r, '/events/feed', ['GET']);
  r.get('/:directoryId/events', async (ctx: Context) => {
    ctx.body = await s.feed.list({ directoryId: ctx.params.directoryId }, param(ctx, 'after'), param(ctx, 'limit'));
  });
  allow(r, '/:directoryId/events', ['GET']);
}

export function eventRoutes(r: Registrar, s: { webhookLogs: WebhookLogsService }): void {
  /** GET /api/v1/dsync/events?tenant&product|directoryId: `{data}`, newest first. */
  r.get('/events', async (ctx: Context) => {
    ctx.body = { data: await s.webhookLogs.list(scopeParams(ctx), pageParams(ctx)) };
  });

  /** DELETE /api/v1/dsync/events?directoryId: clears the directory's logs. */
  r.delete('/events', async (ctx: Context) => {
    await s.webhookLogs.deleteAll(param(ctx, 'directoryId'));
    ctx.body = { data: null };
  });
  allow(r, '/events', ['GET', 'DELETE']);

  /** GET /api/v1/dsync/events/{eventId}: `{data: log | null}`. */
  r.get('/events/:eventId', async (ctx: Context) => {
    ctx.body = { data: await s.webhookLogs.get(scopeParams(ctx), ctx.params.eventId) };
  });
  allow(r, '/events/:eventId', ['GET']);
}

export function webhookRoutes(r: Registrar, s: { batch: BatchService; webhooks: RetryService }): void {
  /**
   * ANY /api/v1/dsync/cron/process-events: schedules a batch processing run now and answers at
   * once, as Jackson (`{message: 'Processing started'}`); a worker does the sending.
   */
  r.all('/cron/process-events', async (ctx: Context) => {
    await s.batch.trigger();
    ctx.body = { message: 'Processing started' };
  });

  /** POST /api/v1/dsync/webhooks/retry[?directoryId] (or `{directoryId}`): `{data: {jobs, batches}}`. */
  r.post('/webhooks/retry', async (ctx: Context) => {
    const directoryId = param(ctx, 'directoryId') ?? bodyObject(ctx).directoryId;
    ctx.body = { data: await s.webhooks.retry(directoryId) };
  });
  allow(r, '/webhooks/retry', ['POST']);
}
