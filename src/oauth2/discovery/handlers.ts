/**
 * Discovery routes on the public listener (Hydra's discoverOidcConfiguration; the same document at
 * both paths), served prepared: the document depends on the configuration (fixed per process) and
 * on the ID-token signing key, so it is rebuilt only when the JSON Web Keys change.
 */
import type { Context } from 'koa';
import { DOCUMENT_CACHE_CONTROL, type PreparedSource, sendPrepared } from '../../core/http/prepared.ts';

/** `document`: the discovery document, prepared until a key of any process changes (see oauth2/index.ts). */
export function discoveryHandlers(document: PreparedSource) {
  async function discoverOidcConfiguration(ctx: Context) {
    sendPrepared(ctx, await document(), DOCUMENT_CACHE_CONTROL);
  }
  return { discoverOidcConfiguration };
}
