/**
 * The routers of directory sync. Public listener: SCIM for identity providers. Admin listener:
 * Jackson's management API under `/api/v1/dsync`, behind `Authorization: Api-Key <key>` (Jackson's
 * gateway takes the second token of the header and looks it up in `JACKSON_API_KEYS`; here every
 * configured key is compared in constant time).
 */

import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { safeEqual } from '../core/crypto/random.ts';
import { isDataException } from '../core/db/errors.ts';
import type { ErrorFamilies } from '../core/http/errors.ts';
import { setActor } from '../core/observability/scope.ts';
import { type GoogleRouteOptions, googleAdminRoutes, googlePublicRoutes } from './cloud/google/handlers.ts';
import type { GoogleService } from './cloud/google/service.ts';
import { directoryByIdRoutes, directoryRoutes } from './directories/handlers.ts';
import type { DirectoriesService } from './directories/service.ts';
import { DSYNC_FAMILY, dsyncMessage, ERROR_RENDERERS, SCIM_FAMILY } from './errors.ts';
import type { BatchService } from './events/batch.ts';
import type { EventFeedService } from './events/feed.ts';
import { eventRoutes, feedRoutes, webhookRoutes } from './events/handlers.ts';
import type { WebhookLogsService } from './events/logs.ts';
import type { RetryService } from './events/retry.ts';
import { groupRoutes } from './groups/handlers.ts';
import type { GroupsService } from './groups/service.ts';
import { SCIM_PREFIX, scimRoutes } from './scim/handlers.ts';
import type { ScimService } from './scim/service.ts';
import { SETUP_PREFIX, setupLinkAdminRoutes, setupLinkPublicRoutes } from './setup-link-handlers.ts';
import type { SetupLinksService } from './setup-links.ts';
import { userRoutes } from './users/handlers.ts';
import type { UsersService } from './users/service.ts';
import { authToken } from './v1-handlers.ts';

export const V1_PREFIX = '/api/v1/dsync';

export interface DsyncRouteServices {
  directories: DirectoriesService;
  users: UsersService;
  groups: GroupsService;
  webhookLogs: WebhookLogsService;
  scim: ScimService;
  batch: BatchService;
  webhooks: RetryService;
  google: GoogleService;
  feed: EventFeedService;
  setupLinks: SetupLinksService;
}

/**
 * Error shapes by path, set before body parsing (so a malformed SCIM body is a SCIM error): SCIM
 * for identity providers, Jackson's `{error: {message}}` for the setup links, the Google
 * authorization routes (listed first: exact paths) and the v1 API.
 */
export function errorFamilies(google: Pick<GoogleRouteOptions, 'authorizePath' | 'callbackPath'>): ErrorFamilies {
  return {
    public: [
      { prefix: google.authorizePath, family: DSYNC_FAMILY },
      { prefix: google.callbackPath, family: DSYNC_FAMILY },
      { prefix: SCIM_PREFIX, family: SCIM_FAMILY },
      { prefix: SETUP_PREFIX, family: DSYNC_FAMILY },
    ],
    admin: [{ prefix: V1_PREFIX, family: DSYNC_FAMILY }],
    renderers: ERROR_RENDERERS,
  };
}

export function apiKeyGuard(keys: readonly string[]) {
  return async (ctx: Context, next: Next) => {
    const token = authToken(ctx);
    let ok = false;
    // Compare with every key, without stopping early.
    for (const k of keys) ok = safeEqual(k, token) || ok;
    if (!ok || !token) throw dsyncMessage(401, 'Unauthorized');
    setActor({ kind: 'api_key' }); // audit events of this request (never the key itself)
    await next();
  };
}

export function publicRouter(s: DsyncRouteServices, google: GoogleRouteOptions): Router {
  const r = new Router();
  scimRoutes(r, s);
  setupLinkPublicRoutes(r, s);
  googlePublicRoutes(r, s, google);
  return r;
}

export function adminRouter(s: DsyncRouteServices, apiKeys: readonly string[]): Router {
  const r = new Router({ prefix: V1_PREFIX });
  r.use(async (_ctx, next) => {
    try {
      await next();
    } catch (e) {
      // A value PostgreSQL refuses (NUL byte, out of range) is the caller's: 400, not 500.
      if (isDataException(e)) throw dsyncMessage(400, 'Invalid input.');
      throw e;
    }
  });
  r.use(apiKeyGuard(apiKeys));
  // Fixed paths before `/:directoryId`, which would match them too.
  directoryRoutes(r, s);
  userRoutes(r, s);
  groupRoutes(r, s);
  setupLinkAdminRoutes(r, s);
  feedRoutes(r, s);
  eventRoutes(r, s);
  webhookRoutes(r, s);
  googleAdminRoutes(r, s);
  directoryByIdRoutes(r, s);
  return r;
}
