/** `GET|POST /userinfo` (getOidcUserInfo). */
import type { Context } from 'koa';
import { bearerToken, firstValue } from '../../core/http/params.ts';
import type { UserinfoService } from './service.ts';

/** RFC 6750: the Authorization header, else an `access_token` form or query parameter. */
function accessTokenOf(ctx: Context): string | undefined {
  const bearer = bearerToken(ctx.get('authorization'));
  if (bearer !== undefined) return bearer;
  const body = ctx.request.body as Record<string, unknown> | undefined;
  return firstValue(body?.access_token) || firstValue(ctx.query.access_token) || undefined;
}

export function userinfoHandlers(service: UserinfoService) {
  async function getOidcUserInfo(ctx: Context) {
    const r = await service.userinfo(accessTokenOf(ctx));
    if (r.kind === 'jwt') {
      ctx.type = 'application/jwt';
      ctx.body = r.token;
    } else ctx.body = r.body;
  }
  return { getOidcUserInfo };
}
