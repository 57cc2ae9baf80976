/** `/api/v1/dsync` directory routes (Jackson pages/api/v1/dsync/{index,[directoryId],product}.ts). */

import type { Context } from 'koa';
import { isAppError } from '../../core/errors.ts';
import type { Registrar } from '../../core/http/routes.ts';
import { dsyncMessage } from '../errors.ts';
import { allow, bodyObject, pageParams, param } from '../v1-handlers.ts';
import type { DirectoriesService } from './service.ts';

/** Jackson `normalizeBooleanParam`: `false` and `'false'` are false, anything else is true. */
const flag = (v: unknown) => !(v === false || v === 'false');

export function directoryRoutes(r: Registrar, s: { directories: DirectoriesService }): void {
  /** POST /api/v1/dsync: create a directory. */
  r.post('/', async (ctx: Context) => {
    const data = await s.directories.create(bodyObject(ctx));
    ctx.status = 201;
    ctx.body = { data };
  });

  /** GET /api/v1/dsync?tenant&product: the directories of a tenant and product. */
  r.get('/', async (ctx: Context) => {
    const tenant = param(ctx, 'tenant');
    const product = param(ctx, 'product');
    if (!tenant || !product) throw dsyncMessage(400, 'Please provide tenant and product');
    ctx.body = { data: await s.directories.byTenantAndProduct(tenant, product) };
  });
  allow(r, '/', ['GET', 'POST']);

  /** GET /api/v1/dsync/product?product: the directories of a product, paged; the whole envelope. */
  r.get('/product', async (ctx: Context) => {
    const product = param(ctx, 'product');
    if (!product) throw dsyncMessage(400, 'Please provide a product');
    ctx.body = { data: await s.directories.filterBy({ ...pageParams(ctx), product }), error: null };
  });
  allow(r, '/product', ['GET']);
}

export function directoryByIdRoutes(r: Registrar, s: { directories: DirectoriesService }): void {
  /** GET /api/v1/dsync/{directoryId} */
  r.get('/:directoryId', async (ctx: Context) => {
    ctx.body = { data: await s.directories.get(ctx.params.directoryId) };
  });

  /** PATCH /api/v1/dsync/{directoryId}: update; `deactivated` and `log_webhook_events` are normalised first. */
  r.patch('/:directoryId', async (ctx: Context) => {
    const body = { ...bodyObject(ctx) };
    if ('deactivated' in body) body.deactivated = flag(body.deactivated);
    if ('log_webhook_events' in body) body.log_webhook_events = flag(body.log_webhook_events);
    ctx.body = { data: await s.directories.update(ctx.params.directoryId, body) };
  });

  /** DELETE /api/v1/dsync/{directoryId}: always 200 `{data: {}}`, as Jackson (the result is ignored). */
  r.delete('/:directoryId', async (ctx: Context) => {
    await s.directories.remove(ctx.params.directoryId).catch((e) => {
      if (!isAppError(e)) throw e;
    });
    ctx.body = { data: {} };
  });
  allow(r, '/:directoryId', ['GET', 'PATCH', 'DELETE']);
}
