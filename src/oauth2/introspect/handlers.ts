/** `POST /admin/oauth2/introspect` (introspectOAuth2Token): form in, RFC 7662 JSON out, never cached. */
import type Router from '@koa/router';
import { formFields } from '../token/handlers.ts';
import type { IntrospectionService } from './service.ts';

export function registerIntrospectionRoutes(router: Router, service: IntrospectionService): void {
  router.post('/admin/oauth2/introspect', async function introspectOAuth2Token(ctx) {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = await service.introspect(formFields(ctx));
    ctx.type = 'application/json;charset=UTF-8';
  });
}
