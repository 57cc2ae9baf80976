/** `POST /admin/oauth2/introspect` (introspectOAuth2Token): form in, RFC 7662 JSON out, never cached. */
import type { Context } from 'koa';
import { noStore } from '../../core/http/params.ts';
import { oauth2Form } from '../token/handlers.ts';
import type { IntrospectionService } from './service.ts';

export function introspectionHandlers(service: IntrospectionService) {
  async function introspectOAuth2Token(ctx: Context) {
    noStore(ctx);
    const body = await service.introspect(oauth2Form(ctx));
    ctx.type = 'application/json;charset=UTF-8';
    ctx.body = body;
  }
  return { introspectOAuth2Token };
}
