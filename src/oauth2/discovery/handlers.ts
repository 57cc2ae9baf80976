/** Discovery routes on the public listener (Hydra's discoverOidcConfiguration; the same document at both paths). */
import type { Context } from 'koa';
import type { DiscoveryService } from './service.ts';

export function discoveryHandlers(service: DiscoveryService) {
  async function discoverOidcConfiguration(ctx: Context) {
    ctx.body = await service.getConfiguration();
  }
  return { discoverOidcConfiguration };
}
