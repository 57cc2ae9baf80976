/**
 * Discovery routes on the public listener (Hydra's discoverOidcConfiguration; the same document at
 * both paths), served prepared: the document depends on the configuration (fixed per process) and
 * on the ID-token signing key, so it is rebuilt only when the JSON Web Keys change.
 */
import type { Context } from 'koa';
import type { ChangeFeed } from '../../core/db/changes.ts';
import { DOCUMENT_CACHE_CONTROL, preparedCache, sendPrepared } from '../../core/http/prepared.ts';
import type { DiscoveryService } from './service.ts';

export function discoveryHandlers(service: DiscoveryService, changes?: ChangeFeed) {
  const document = preparedCache(changes, 'jwk', () => service.getConfiguration());
  async function discoverOidcConfiguration(ctx: Context) {
    sendPrepared(ctx, await document(), DOCUMENT_CACHE_CONTROL);
  }
  return { discoverOidcConfiguration };
}
