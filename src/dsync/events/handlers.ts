/** `/api/v1/dsync/events`: webhook logs (Jackson pages/api/v1/dsync/events/{index,[eventId]}.ts). */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { allow, pageParams, param, scopeParams } from '../v1-handlers.ts';
import type { WebhookLogsService } from './logs.ts';

export function eventRoutes(r: Router, s: { webhookLogs: WebhookLogsService }): void {
  /** GET /api/v1/dsync/events?tenant&product|directoryId: `{data}` (Jackson's `{data, pageToken}`). */
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
