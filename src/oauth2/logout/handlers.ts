/**
 * `GET|POST /oauth2/sessions/logout` (revokeOidcSession) on the public listener and
 * `/admin/oauth2/auth/requests/logout[/accept|/reject]` on the admin listener (Hydra operation ids).
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Config } from '../../core/config/load.ts';
import { requestParams } from '../authorize/handlers.ts';
import { koaCookieJar } from '../cookie-jar.ts';
import { firstValue } from '../guard.ts';
import { sendHtml } from '../../core/http/html.ts';
import { frontchannelFrameSources, frontchannelPage } from './page.ts';
import type { LogoutService } from './service.ts';

const challengeOf = (ctx: Context) => firstValue(ctx.query.logout_challenge) || firstValue(ctx.query.challenge);

export function registerLogoutRoutes(pub: Router, admin: Router, service: LogoutService, config: Config): void {
  async function revokeOidcSession(ctx: Context) {
    // The verifier comes back in the query only (Hydra); the other parameters may be a form.
    const verifier = (firstValue(ctx.query.logout_verifier) ?? '').trim();
    const outcome = await service.revokeOidcSession(
      requestParams(ctx),
      verifier || undefined,
      ctx.originalUrl,
      koaCookieJar(ctx, config),
    );
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    if (outcome.kind === 'page') {
      const { redirectTo, frontchannelUrls } = outcome;
      sendHtml(ctx, (nonce) => frontchannelPage(redirectTo, frontchannelUrls, nonce), {
        frameSrc: frontchannelFrameSources(frontchannelUrls),
      });
      return;
    }
    if (outcome.aborted) {
      // The browser is sent to the error page: the endpoint working as designed, not failing.
      const level = outcome.aborted.status >= 500 ? 'error' : 'info';
      ctx.state.log?.[level]({ error: outcome.aborted.error }, 'logout request aborted with a redirect');
    }
    ctx.status = 302;
    ctx.set('Location', outcome.location);
    ctx.body = '';
  }
  pub.get('/oauth2/sessions/logout', revokeOidcSession);
  pub.post('/oauth2/sessions/logout', revokeOidcSession);

  const base = '/admin/oauth2/auth/requests/logout';
  admin.get(base, async function getOAuth2LogoutRequest(ctx) {
    ctx.body = await service.getLogoutRequest(challengeOf(ctx));
  });
  admin.put(`${base}/accept`, async function acceptOAuth2LogoutRequest(ctx) {
    ctx.body = await service.acceptLogoutRequest(challengeOf(ctx));
  });
  admin.put(`${base}/reject`, async function rejectOAuth2LogoutRequest(ctx) {
    await service.rejectLogoutRequest(challengeOf(ctx));
    ctx.status = 204;
  });
}
