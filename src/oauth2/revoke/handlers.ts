/** `POST /oauth2/revoke` (revokeOAuth2Token) and `DELETE /admin/oauth2/tokens` (deleteOAuth2Token). */
import type Router from '@koa/router';
import { firstValue } from '../guard.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { formFields } from '../token/handlers.ts';
import type { RevocationService } from './service.ts';

export function registerRevocationRoutes(publicRouter: Router, adminRouter: Router, service: RevocationService): void {
  publicRouter.all('/oauth2/revoke', async function revokeOAuth2Token(ctx) {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    if (ctx.method !== 'POST') throw oauth2Error('invalid_request');
    await service.revoke({ form: formFields(ctx), authorization: ctx.get('authorization') || undefined });
    ctx.status = 200;
    ctx.body = '';
  });

  adminRouter.delete('/admin/oauth2/tokens', async function deleteOAuth2Token(ctx) {
    await service.deleteClientAccessTokens(firstValue(ctx.query.client_id));
    ctx.status = 204;
  });
}
