/**
 * Small helpers shared by the v1 handlers: query parameters as Jackson's Next.js routes read them,
 * and the 405 answer of Jackson's `defaultHandler`.
 */

import type { Context } from 'koa';
import { firstValue } from '../core/http/params.ts';
import type { Registrar } from '../core/http/routes.ts';
import { dsyncMessage } from './errors.ts';
import type { PageParams } from './types.ts';

/**
 * Jackson's `extractAuthToken`: the second word of `Authorization`, whatever the scheme (`Bearer
 * <scim secret>`, `Api-Key <key>`); an empty string when there is none.
 */
export const authToken = (ctx: Context): string => ctx.get('authorization').trim().split(/\s+/)[1] ?? '';

/** The first value of a query parameter. */
export const param = (ctx: Context, name: string): string | undefined => firstValue(ctx.query[name]);

/** Jackson `parsePaginateApiParams`: `pageOffset|offset`, `pageLimit|limit` through parseInt, `pageToken`. */
export function pageParams(ctx: Context): PageParams {
  const offset = param(ctx, 'pageOffset') ?? param(ctx, 'offset');
  const limit = param(ctx, 'pageLimit') ?? param(ctx, 'limit');
  return {
    pageOffset: offset === undefined ? undefined : Number.parseInt(offset, 10),
    pageLimit: limit === undefined ? undefined : Number.parseInt(limit, 10),
    pageToken: param(ctx, 'pageToken'),
  };
}

/** The scope parameters of the v1 read routes. */
export const scopeParams = (ctx: Context) => ({
  tenant: param(ctx, 'tenant'),
  product: param(ctx, 'product'),
  directoryId: param(ctx, 'directoryId'),
});

/** The JSON body when it is an object, else `{}`. */
export function bodyObject(ctx: Context): Record<string, unknown> {
  const b = ctx.request.body as unknown;
  return typeof b === 'object' && b !== null && !Array.isArray(b) ? (b as Record<string, unknown>) : {};
}

/** Registers, after the real routes of `path`, Jackson's 405 `Method X not allowed.` with `Allow`. */
export function allow(router: Registrar, path: string, methods: string[]): void {
  router.all(path, (ctx) => {
    throw dsyncMessage(405, `Method ${ctx.method} not allowed.`, { Allow: methods.join(', ') });
  });
}
