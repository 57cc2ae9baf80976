/**
 * Admin API for OAuth 2.0 clients (`/admin/clients…`), named after Hydra's operation ids:
 * decode → one service call → render.
 */
import type { Context } from 'koa';
import { firstValue } from '../../core/http/params.ts';
import { linkHeader } from '../../core/pagination.ts';
import { clientBody, decodeBody, lifespansBody, renderClient, toDraft, toLifespans } from './schemas.ts';
import type { ClientService, WrittenClient } from './service.ts';

const one = (v: string | string[] | undefined) => firstValue(v) || undefined;
const idOf = (ctx: Context) => (ctx.params as { id: string }).id;
/**
 * The parsed body, or undefined when none was sent (the body parser turns an empty body into `{}`,
 * which would be a valid client: an empty PUT would then wipe the client). Hydra answers 400 there.
 */
const bodyOf = (ctx: Context): unknown =>
  ctx.request.length || ctx.get('transfer-encoding') ? ctx.request.body : undefined;

/** A write response: the secret and registration token only when this write produced them. */
export const renderWritten = (w: WrittenClient) =>
  renderClient(w.client, {
    client_secret: w.secret,
    registration_access_token: w.registrationToken,
    registration_client_uri: w.registrationUri,
  });

export function clientHandlers(clients: ClientService) {
  return {
    async createOAuth2Client(ctx: Context) {
      const draft = toDraft(decodeBody(clientBody, bodyOf(ctx)));
      const w = await clients.create(draft, { dynamic: false });
      ctx.status = 201;
      ctx.set('Location', `/admin/clients/${encodeURIComponent(w.client.client_id)}`);
      ctx.body = renderWritten(w);
    },

    async listOAuth2Clients(ctx: Context) {
      const page = await clients.list({
        pageSize: one(ctx.query.page_size),
        pageToken: one(ctx.query.page_token),
        clientName: one(ctx.query.client_name),
        owner: one(ctx.query.owner),
      });
      ctx.set(
        'Link',
        linkHeader({ path: ctx.path, query: ctx.query, size: page.size, first: page.firstToken, next: page.nextToken }),
      );
      ctx.body = page.items.map((c) => renderClient(c));
    },

    async getOAuth2Client(ctx: Context) {
      ctx.body = renderClient(await clients.get(idOf(ctx)));
    },

    async setOAuth2Client(ctx: Context) {
      const draft = toDraft(decodeBody(clientBody, bodyOf(ctx)));
      ctx.body = renderWritten(await clients.replace(idOf(ctx), draft));
    },

    async patchOAuth2Client(ctx: Context) {
      ctx.body = renderWritten(await clients.patch(idOf(ctx), ctx.request.body));
    },

    async deleteOAuth2Client(ctx: Context) {
      await clients.remove(idOf(ctx));
      ctx.status = 204;
    },

    async setOAuth2ClientLifespans(ctx: Context) {
      const lifespans = toLifespans(decodeBody(lifespansBody, bodyOf(ctx)));
      ctx.body = renderClient(await clients.setLifespans(idOf(ctx), lifespans));
    },
  };
}
