/** Discovery routes on the public listener (Hydra's discoverOidcConfiguration; the same document at both paths). */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { DiscoveryService } from './service.ts';

export function registerDiscoveryRoutes(publicRouter: Router, service: DiscoveryService): void {
  async function discoverOidcConfiguration(ctx: Context) {
    ctx.body = await service.getConfiguration();
  }
  publicRouter.get('/.well-known/openid-configuration', discoverOidcConfiguration);
  publicRouter.get('/.well-known/oauth-authorization-server', discoverOidcConfiguration);
}
