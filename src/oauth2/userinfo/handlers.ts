/** `GET|POST /userinfo` (getOidcUserInfo). */
import type { Context } from 'koa';
import type { ClientCertificates } from '../mtls.ts';
import { presentedToken } from '../sender-constraint.ts';
import type { UserinfoService } from './service.ts';

export function userinfoHandlers(service: UserinfoService, certificates: ClientCertificates) {
  async function getOidcUserInfo(ctx: Context) {
    const r = await service.userinfo(presentedToken(ctx, certificates));
    if (r.kind === 'jwt') {
      ctx.type = 'application/jwt';
      ctx.body = r.token;
    } else ctx.body = r.body;
  }
  return { getOidcUserInfo };
}
