/** Admin API: `/admin/oauth2/auth/requests/{login,consent}[/accept|/reject]` (Hydra operation ids). */
import type { Context } from 'koa';
import { firstValue } from '../../core/http/params.ts';
import { parseOr400 } from '../guard.ts';
import { acceptConsentBody, acceptLoginBody, rejectBody } from './schemas.ts';
import type { FlowsService } from './service.ts';

const challengeOf = (ctx: Context, kind: 'login' | 'consent') =>
  firstValue(ctx.query[`${kind}_challenge`]) || firstValue(ctx.query.challenge);

export function flowHandlers(flows: FlowsService) {
  return {
    async getOAuth2LoginRequest(ctx: Context) {
      ctx.body = await flows.getLoginRequest(challengeOf(ctx, 'login'));
    },
    async acceptOAuth2LoginRequest(ctx: Context) {
      const challenge = challengeOf(ctx, 'login');
      ctx.body = await flows.acceptLogin(challenge, parseOr400(acceptLoginBody, ctx.request.body));
    },
    async rejectOAuth2LoginRequest(ctx: Context) {
      ctx.body = await flows.rejectLogin(challengeOf(ctx, 'login'), parseOr400(rejectBody, ctx.request.body));
    },

    async getOAuth2ConsentRequest(ctx: Context) {
      const r = await flows.getConsentRequest(challengeOf(ctx, 'consent'));
      if ('gone' in r) {
        ctx.status = 410;
        ctx.body = { redirect_to: r.redirect_to };
      } else ctx.body = r;
    },
    async acceptOAuth2ConsentRequest(ctx: Context) {
      const challenge = challengeOf(ctx, 'consent');
      ctx.body = await flows.acceptConsent(challenge, parseOr400(acceptConsentBody, ctx.request.body));
    },
    async rejectOAuth2ConsentRequest(ctx: Context) {
      ctx.body = await flows.rejectConsent(challengeOf(ctx, 'consent'), parseOr400(rejectBody, ctx.request.body));
    },
  };
}
