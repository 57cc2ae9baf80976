/** `POST /oauth2/revoke` (revokeOAuth2Token) and `DELETE /admin/oauth2/tokens` (deleteOAuth2Token). */
import type { Context } from 'koa';
import { firstValue, noStore } from '../../core/http/params.ts';
import type { ClientCertificates } from '../mtls.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { oauth2Form } from '../token/handlers.ts';
import type { RevocationService } from './service.ts';

export function revocationHandlers(service: RevocationService, certificates: ClientCertificates) {
  /** POST only; other methods get fosite's `invalid_request` (400). */
  async function revokeOAuth2Token(ctx: Context) {
    noStore(ctx);
    if (ctx.method !== 'POST') throw oauth2Error('invalid_request');
    await service.revoke({
      form: oauth2Form(ctx),
      authorization: ctx.get('authorization') || undefined,
      certificate: certificates.of(ctx),
    });
    ctx.status = 200;
    ctx.body = '';
  }

  async function deleteOAuth2Token(ctx: Context) {
    await service.deleteClientAccessTokens(firstValue(ctx.query.client_id));
    ctx.status = 204;
  }
  return { revokeOAuth2Token, deleteOAuth2Token };
}
