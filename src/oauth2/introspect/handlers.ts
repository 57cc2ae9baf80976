/** `POST /admin/oauth2/introspect` (introspectOAuth2Token): form in, RFC 7662 JSON out, never cached. */
import type { Context } from 'koa';
import { formFields } from '../token/handlers.ts';
import type { IntrospectionService } from './service.ts';

export function introspectionHandlers(service: IntrospectionService) {
  async function introspectOAuth2Token(ctx: Context) {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = await service.introspect(formFields(ctx));
    ctx.type = 'application/json;charset=UTF-8';
  }
  return { introspectOAuth2Token };
}
