/** Admin API: `/admin/trust/grants/jwt-bearer/issuers[/{id}]` (Hydra operation ids). */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { linkHeader } from '../../core/pagination.ts';
import { firstValue } from '../guard.ts';
import { decodeTrustBody, renderTrustedIssuer } from './schemas.ts';
import type { TrustService } from './service.ts';

const BASE = '/admin/trust/grants/jwt-bearer/issuers';
const idOf = (ctx: Context) => (ctx.params as { id: string }).id;

export function registerTrustRoutes(router: Router, trust: TrustService): void {
  router.post(BASE, async function trustOAuth2JwtGrantIssuer(ctx) {
    const t = await trust.create(decodeTrustBody(ctx.request.body));
    ctx.status = 201;
    ctx.set('Location', `/trust/grants/jwt-bearer/issuers/${encodeURIComponent(t.id)}`);
    ctx.body = renderTrustedIssuer(t);
  });

  router.get(BASE, async function listTrustedOAuth2JwtGrantIssuers(ctx) {
    const q = ctx.query as Record<string, string | string[] | undefined>;
    const page = await trust.list(q, firstValue(q.issuer) || undefined);
    ctx.set(
      'Link',
      linkHeader({ path: ctx.path, query: q, size: page.size, first: page.firstToken, next: page.nextToken }),
    );
    ctx.body = page.items.map(renderTrustedIssuer);
  });

  router.get(`${BASE}/:id`, async function getTrustedOAuth2JwtGrantIssuer(ctx) {
    ctx.body = renderTrustedIssuer(await trust.get(idOf(ctx)));
  });

  router.delete(`${BASE}/:id`, async function deleteTrustedOAuth2JwtGrantIssuer(ctx) {
    await trust.remove(idOf(ctx));
    ctx.status = 204;
  });
}
