/**
 * `GET|POST /oauth2/sessions/logout` (revokeOidcSession) on the public listener and
 * `/admin/oauth2/auth/requests/logout[/accept|/reject]` on the admin listener (Hydra operation ids).
 */
import type { Context } from 'koa';
import { sendHtml } from '../../core/http/html.ts';
import { firstValue, noStore } from '../../core/http/params.ts';
import { requestParams } from '../authorize/handlers.ts';
import { koaCookieJar } from '../cookie-jar.ts';
import type { OAuth2Config } from '../deps.ts';
import { frontchannelFrameSources, frontchannelPage } from './page.ts';
import type { LogoutService } from './service.ts';

const challengeOf = (ctx: Context) => firstValue(ctx.query.logout_challenge) || firstValue(ctx.query.challenge);

export function logoutHandlers(service: LogoutService, config: OAuth2Config) {
  async function revokeOidcSession(ctx: Context) {
    // The verifier comes back in the query only (Hydra); the other parameters may be a form.
    const verifier = (firstValue(ctx.query.logout_verifier) ?? '').trim();
    const outcome = await service.revokeOidcSession(
      requestParams(ctx),
      verifier || undefined,
      ctx.originalUrl,
      koaCookieJar(ctx, config),
    );
    noStore(ctx);
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
  return {
    revokeOidcSession,
    async getOAuth2LogoutRequest(ctx: Context) {
      ctx.body = await service.getLogoutRequest(challengeOf(ctx));
    },
    async acceptOAuth2LogoutRequest(ctx: Context) {
      ctx.body = await service.acceptLogoutRequest(challengeOf(ctx));
    },
    async rejectOAuth2LogoutRequest(ctx: Context) {
      await service.rejectLogoutRequest(challengeOf(ctx));
      ctx.status = 204;
    },
  };
}
