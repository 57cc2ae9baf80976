/**
 * JSON Web Key routes: `/admin/keys/…` on the admin listener (Hydra's JwkApi operations) and
 * `/.well-known/jwks.json` on the public listener (discoverJsonWebKeys).
 */
import type { Context } from 'koa';
import { DOCUMENT_CACHE_CONTROL, type PreparedSource, sendPrepared } from '../../core/http/prepared.ts';
import { createJsonWebKeySetBody, jsonWebKeyBody, jsonWebKeySetBody, parseBody } from './schemas.ts';
import type { JwkService } from './service.ts';

export interface JwkRouteDeps {
  service: JwkService;
  /** `urls.self.issuer`: Hydra builds the Location of a created set from it (`<issuer>/keys/<set>`). */
  issuer: string;
  /** `/.well-known/jwks.json`, prepared until a key of any process changes (see oauth2/index.ts). */
  publicJwks: PreparedSource;
}

const param = (ctx: Context, name: string): string => String((ctx.params as Record<string, string>)[name] ?? '');

export function jwkHandlers(d: JwkRouteDeps) {
  async function discoverJsonWebKeys(ctx: Context) {
    sendPrepared(ctx, await d.publicJwks(), DOCUMENT_CACHE_CONTROL);
  }

  async function createJsonWebKeySet(ctx: Context) {
    const body = parseBody(createJsonWebKeySetBody, ctx.request.body);
    const set = param(ctx, 'set');
    const jwks = await d.service.createKeySet(set, body);
    const location = new URL(d.issuer);
    location.pathname = `${location.pathname.replace(/\/+$/, '')}/keys/${encodeURIComponent(set)}`;
    ctx.set('Location', location.toString());
    ctx.status = 201;
    ctx.body = jwks;
  }

  async function getJsonWebKeySet(ctx: Context) {
    ctx.body = await d.service.getKeySet(param(ctx, 'set'));
  }

  async function getJsonWebKey(ctx: Context) {
    ctx.body = await d.service.getKey(param(ctx, 'set'), param(ctx, 'kid'));
  }

  async function setJsonWebKeySet(ctx: Context) {
    const body = parseBody(jsonWebKeySetBody, ctx.request.body);
    ctx.body = await d.service.setKeySet(param(ctx, 'set'), body.keys);
  }

  async function setJsonWebKey(ctx: Context) {
    const body = parseBody(jsonWebKeyBody, ctx.request.body);
    ctx.body = await d.service.setKey(param(ctx, 'set'), param(ctx, 'kid'), body);
  }

  async function deleteJsonWebKeySet(ctx: Context) {
    await d.service.deleteKeySet(param(ctx, 'set'));
    ctx.status = 204;
  }

  async function deleteJsonWebKey(ctx: Context) {
    await d.service.deleteKey(param(ctx, 'set'), param(ctx, 'kid'));
    ctx.status = 204;
  }

  return {
    discoverJsonWebKeys,
    createJsonWebKeySet,
    getJsonWebKeySet,
    setJsonWebKeySet,
    deleteJsonWebKeySet,
    getJsonWebKey,
    setJsonWebKey,
    deleteJsonWebKey,
  };
}
