/** Admin API: `/admin/trust/grants/jwt-bearer/issuers[/{id}]` (Hydra operation ids). */
import type { Context } from 'koa';
import { firstValue } from '../../core/http/params.ts';
import { linkHeader } from '../../core/pagination.ts';
import { decodeTrustBody, renderTrustedIssuer } from './schemas.ts';
import type { TrustService } from './service.ts';

const idOf = (ctx: Context) => (ctx.params as { id: string }).id;

export function trustHandlers(trust: TrustService) {
  return {
    async trustOAuth2JwtGrantIssuer(ctx: Context) {
      const t = await trust.create(decodeTrustBody(ctx.request.body));
      ctx.status = 201;
      ctx.set('Location', `/trust/grants/jwt-bearer/issuers/${encodeURIComponent(t.id)}`);
      ctx.body = renderTrustedIssuer(t);
    },

    async listTrustedOAuth2JwtGrantIssuers(ctx: Context) {
      const q = ctx.query as Record<string, string | string[] | undefined>;
      const page = await trust.list(q, firstValue(q.issuer) || undefined);
      ctx.set(
        'Link',
        linkHeader({ path: ctx.path, query: q, size: page.size, first: page.firstToken, next: page.nextToken }),
      );
      ctx.body = page.items.map(renderTrustedIssuer);
    },

    async getTrustedOAuth2JwtGrantIssuer(ctx: Context) {
      ctx.body = renderTrustedIssuer(await trust.get(idOf(ctx)));
    },

    async deleteTrustedOAuth2JwtGrantIssuer(ctx: Context) {
      await trust.remove(idOf(ctx));
      ctx.status = 204;
    },
  };
}
