/**
 * Setup-link routes (Jackson pages/api/v1/dsync/setuplinks/{index,product}.ts and
 * pages/api/setup/[token]/**): the Api-Key management routes on the v1 router, and the routes a
 * tenant's administrator uses with the link's token alone, on the public listener.
 */

import type { Context } from 'koa';
import type { Registrar } from '../core/http/routes.ts';
import type { SetupLinksService } from './setup-links.ts';
import { allow, bodyObject, pageParams, param } from './v1-handlers.ts';

export const SETUP_PREFIX = '/api/setup';

export function setupLinkAdminRoutes(r: Registrar, s: { setupLinks: SetupLinksService }): void {
  /** POST /api/v1/dsync/setuplinks: 201 `{data: link}` (the existing link unless `regenerate`). */
  r.post('/setuplinks', async (ctx: Context) => {
    ctx.status = 201;
    ctx.body = { data: await s.setupLinks.create(bodyObject(ctx)) };
  });
  /** GET /api/v1/dsync/setuplinks?id | ?tenant&product: `{data: link}`. */
  r.get('/setuplinks', async (ctx: Context) => {
    const id = param(ctx, 'id');
    ctx.body = {
      data: id
        ? await s.setupLinks.get(id)
        : await s.setupLinks.byTenantAndProduct(param(ctx, 'tenant'), param(ctx, 'product')),
    };
  });
  /** DELETE /api/v1/dsync/setuplinks?id | ?tenant&product: revokes; `{data: {}}`. */
  r.delete('/setuplinks', async (ctx: Context) => {
    await s.setupLinks.remove({ id: param(ctx, 'id'), tenant: param(ctx, 'tenant'), product: param(ctx, 'product') });
    ctx.body = { data: {} };
  });
  allow(r, '/setuplinks', ['GET', 'POST', 'DELETE']);

  /** GET /api/v1/dsync/setuplinks/product?product: `{data: [link], pageToken}`, newest first. */
  r.get('/setuplinks/product', async (ctx: Context) => {
    ctx.body = await s.setupLinks.byProduct(param(ctx, 'product'), pageParams(ctx));
  });
  allow(r, '/setuplinks/product', ['GET']);
}

export function setupLinkPublicRoutes(r: Registrar, s: { setupLinks: SetupLinksService }): void {
  const setup = () => s.setupLinks.setup;
  const base = `${SETUP_PREFIX}/:token`;
  r.get(base, async (ctx: Context) => {
    ctx.body = { data: await setup().describe(ctx.params.token) };
  });
  allow(r, base, ['GET']);

  r.get(`${base}/directory-sync`, async (ctx: Context) => {
    ctx.body = { data: await setup().list(ctx.params.token) };
  });
  r.post(`${base}/directory-sync`, async (ctx: Context) => {
    ctx.status = 201;
    ctx.body = { data: await setup().create(ctx.params.token, bodyObject(ctx)) };
  });
  allow(r, `${base}/directory-sync`, ['GET', 'POST']);

  const one = `${base}/directory-sync/:directoryId`;
  r.get(one, async (ctx: Context) => {
    ctx.body = { data: await setup().get(ctx.params.token, ctx.params.directoryId) };
  });
  r.patch(one, async (ctx: Context) => {
    await setup().update(ctx.params.token, ctx.params.directoryId, bodyObject(ctx));
    ctx.body = { data: null };
  });
  r.delete(one, async (ctx: Context) => {
    await setup().remove(ctx.params.token, ctx.params.directoryId);
    ctx.body = { data: null };
  });
  allow(r, one, ['GET', 'PATCH', 'DELETE']);
}
