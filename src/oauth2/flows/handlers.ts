/** Admin API: `/admin/oauth2/auth/requests/{login,consent}[/accept|/reject]` (Hydra operation ids). */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { firstValue, parseOr400 } from '../guard.ts';
import { acceptConsentBody, acceptLoginBody, rejectBody } from './schemas.ts';
import type { FlowsService } from './service.ts';

const challengeOf = (ctx: Context, kind: 'login' | 'consent') =>
  firstValue(ctx.query[`${kind}_challenge`]) || firstValue(ctx.query.challenge);

export function registerFlowRoutes(router: Router, flows: FlowsService): void {
  const base = '/admin/oauth2/auth/requests';

  router.get(`${base}/login`, async function getOAuth2LoginRequest(ctx) {
    ctx.body = await flows.getLoginRequest(challengeOf(ctx, 'login'));
  });
  router.put(`${base}/login/accept`, async function acceptOAuth2LoginRequest(ctx) {
    const challenge = challengeOf(ctx, 'login');
    ctx.body = await flows.acceptLogin(challenge, parseOr400(acceptLoginBody, ctx.request.body));
  });
  router.put(`${base}/login/reject`, async function rejectOAuth2LoginRequest(ctx) {
    ctx.body = await flows.rejectLogin(challengeOf(ctx, 'login'), parseOr400(rejectBody, ctx.request.body));
  });

  router.get(`${base}/consent`, async function getOAuth2ConsentRequest(ctx) {
    const r = await flows.getConsentRequest(challengeOf(ctx, 'consent'));
    if ('gone' in r) {
      ctx.status = 410;
      ctx.body = { redirect_to: r.redirect_to };
    } else ctx.body = r;
  });
  router.put(`${base}/consent/accept`, async function acceptOAuth2ConsentRequest(ctx) {
    const challenge = challengeOf(ctx, 'consent');
    ctx.body = await flows.acceptConsent(challenge, parseOr400(acceptConsentBody, ctx.request.body));
  });
  router.put(`${base}/consent/reject`, async function rejectOAuth2ConsentRequest(ctx) {
    ctx.body = await flows.rejectConsent(challengeOf(ctx, 'consent'), parseOr400(rejectBody, ctx.request.body));
  });
}
