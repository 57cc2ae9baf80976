/**
 * The routes of directory sync, each group with its policy (core/http/routes.ts). Public listener:
 * SCIM for identity providers, setup links, Google authorization. Admin listener (or where
 * `dsync.api.listener` says): Jackson's management API under `/api/v1/dsync`, behind
 * `Authorization: Api-Key <key>` (Jackson's gateway takes the second token of the header and looks
 * it up in `JACKSON_API_KEYS`; here every configured key is compared in constant time). And Jackson's
 * health route (`GET /api/health`), which the server registers on both listeners.
 */

import type { Context, Next } from 'koa';
import type { KeyRing } from '../core/crypto/keys.ts';
import { safeEqual } from '../core/crypto/random.ts';
import { isDataException } from '../core/db/errors.ts';
import { type AdminCredentials, adminChallenge, adminFailedAuth } from '../core/http/admin-auth.ts';
import type { FailedAuthTarget } from '../core/http/auth-failures.ts';
import type { ErrorFamilies } from '../core/http/errors.ts';
import type { HealthDeps } from '../core/http/health.ts';
import { bearerToken } from '../core/http/params.ts';
import type { DeclaredRoute, Guard, JsonMediaType, Registrar, RouteTable } from '../core/http/routes.ts';
import { setActor } from '../core/observability/scope.ts';
import { type GoogleRouteOptions, googleAdminRoutes, googlePublicRoutes } from './cloud/google/handlers.ts';
import type { GoogleService } from './cloud/google/service.ts';
import { directoryByIdRoutes, directoryRoutes } from './directories/handlers.ts';
import type { DirectoriesService } from './directories/service.ts';
import { DSYNC_FAMILY, dsyncMessage, ERROR_RENDERERS, SCIM_FAMILY, scimError } from './errors.ts';
import type { BatchService } from './events/batch.ts';
import type { EventFeedService } from './events/feed.ts';
import { eventRoutes, feedRoutes, webhookRoutes } from './events/handlers.ts';
import type { WebhookLogsService } from './events/logs.ts';
import type { RetryService } from './events/retry.ts';
import { groupRoutes } from './groups/handlers.ts';
import type { GroupsService } from './groups/service.ts';
import { SCIM_PREFIX, scimFailedAuthTarget, scimRoutes } from './scim/handlers.ts';
import type { ScimService } from './scim/service.ts';
import { SETUP_PREFIX, setupLinkAdminRoutes, setupLinkPublicRoutes } from './setup-link-handlers.ts';
import type { SetupLinksService } from './setup-links.ts';
import { setupPageGuard, setupPageRoutes } from './setup-page.ts';
import { userRoutes } from './users/handlers.ts';
import type { UsersService } from './users/service.ts';
import { authToken } from './v1-handlers.ts';

export const V1_PREFIX = '/api/v1/dsync';

/** SCIM request bodies (RFC 7644 §3.1, §8.1): `application/scim+json`, or `application/json`. */
const SCIM_JSON: JsonMediaType = { media: 'application/scim+json', label: 'SCIM JSON' };

/**
 * The admin API family of the v1 API (`gatehouse:admin:dsync`), registered by the composition root:
 * with `serve.admin.auth.enabled`, an admin credential of it may call the v1 API beside the Api-Key.
 */
export const DSYNC_ADMIN_FAMILIES = {
  dsync:
    'Directory sync’s management API (`/api/v1/dsync/…`), which also takes its Jackson `Api-Key` (`dsync.api_keys`).',
} as const;

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

/** A key of `dsync.api_keys`: compared with every key, without stopping early. */
function isApiKey(keys: readonly string[], token: string): boolean {
  let ok = false;
  for (const k of keys) ok = safeEqual(k, token) || ok;
  return ok && token !== '';
}

/**
 * Jackson's gateway: `Authorization: <any scheme> <key of dsync.api_keys>`. With admin credentials
 * (`serve.admin.auth.enabled`), also `Authorization: Bearer <admin API key or access token>` holding
 * the route's family (`dsync`): 403 without it. Refusals are Jackson's `{error: {message}}`; while
 * admin credentials are taken, a 401 also carries their challenge (RFC 6750 §3).
 */
export function apiKeyGuard(keys: readonly string[], admin?: AdminCredentials) {
  return async function apiKey(ctx: Context, next: Next) {
    const token = authToken(ctx);
    if (isApiKey(keys, token)) {
      setActor({ kind: 'api_key' }); // audit events of this request (never the key itself)
      return next();
    }
    if (!admin) throw dsyncMessage(401, 'Unauthorized');
    const presented = bearerToken(ctx.get('authorization'));
    const caller = presented ? await admin.identify(presented) : undefined;
    if (!caller) throw dsyncMessage(401, 'Unauthorized', adminChallenge(presented !== undefined));
    // 403 without the family (in this API's shape: the error has none of its own); else the caller.
    admin.admit(ctx, caller, (ctx.state.route as DeclaredRoute).policy.family as keyof typeof DSYNC_ADMIN_FAMILIES);
    return next();
  };
}

/**
 * With admin credentials taken, a failed Bearer credential that is no Api-Key goes through the
 * failed-authentication limiter as the admin API's do; the Api-Key, Jackson's, is never limited.
 */
const adminFailures =
  (keys: readonly string[]): FailedAuthTarget =>
  (ctx) =>
    bearerToken(ctx.get('authorization')) !== undefined && !isApiKey(keys, authToken(ctx))
      ? adminFailedAuth(ctx)
      : undefined;

/** A value PostgreSQL refuses (NUL byte, out of range) is the caller's: 400, not 500. */
async function dataExceptionsAre400(_ctx: Context, next: Next) {
  try {
    await next();
  } catch (e) {
    if (isDataException(e)) throw dsyncMessage(400, 'Invalid input.');
    throw e;
  }
}

/** The access names of directory sync and their guards (core/http/routes.ts). */
export type DsyncAccess = 'api-key' | 'scim-bearer' | 'setup-token' | 'setup-page' | 'google-link';

export function dsyncGuards(
  s: Pick<DsyncRouteServices, 'setupLinks'>,
  apiKeys: readonly string[],
  admin: AdminCredentials | undefined,
): Record<DsyncAccess, Guard> {
  return {
    'api-key': {
      description:
        'A key of `dsync.api_keys` (`Authorization: Api-Key <key>`); with `serve.admin.auth.enabled`, also an admin credential of the family `dsync` (`Authorization: Bearer`, failures rate limited).',
      check: apiKeyGuard(apiKeys, admin),
      families: Object.keys(DSYNC_ADMIN_FAMILIES),
      ...(admin ? { failedAuth: adminFailures(apiKeys) } : {}),
    },
    'scim-bearer': {
      description:
        "The directory's SCIM secret (`Authorization: Bearer <secret>`): a request without one is refused here; the endpoint compares it in constant time; failures are rate limited.",
      async check(ctx, next) {
        if (!authToken(ctx)) throw scimError(401, 'Unauthorized');
        await next();
      },
    },
    'setup-token': {
      description: "A setup link's token (in the path), unexpired and not revoked.",
      async check(ctx, next) {
        await s.setupLinks.getByToken((ctx.params as { token?: string }).token);
        await next();
      },
    },
    'setup-page': {
      description:
        "A setup link's token (in the path), unexpired and not revoked; a refused link (and any error of the page) is an HTML page. Forms carry a CSRF token bound to the link and must come from this origin.",
      check: setupPageGuard(s),
    },
    'google-link': {
      description:
        "A short-lived authorization link (or a setup link token of the directory's tenant) in the query, verified by the endpoint; the callback checks its signed state and cookie.",
    },
  };
}

/** The public listener's routes: SCIM for identity providers, setup links, Google authorization. */
export function publicRoutes(
  table: RouteTable,
  s: DsyncRouteServices,
  google: GoogleRouteOptions,
  page: { csrfRing: KeyRing; externalUrl: string },
): void {
  scimRoutes(
    table.group({
      access: 'scim-bearer',
      body: [SCIM_JSON],
      bodyLimit: 'scim',
      failedAuth: scimFailedAuthTarget,
      tag: 'dsync',
    }),
    s,
  );
  setupLinkPublicRoutes(table.group({ access: 'setup-token', body: ['json'], tag: 'dsync' }), s);
  setupPageRoutes(table.group({ access: 'setup-page', body: ['form'], tag: 'dsync' }), { ...s, ...page });
  googlePublicRoutes(table.group({ access: 'google-link', tag: 'dsync' }), s, google);
}

/** Jackson's v1 management API under `/api/v1/dsync`, behind the Api-Key (on the listener `dsync.api.listener` names). */
export function v1Routes(table: RouteTable, s: DsyncRouteServices): void {
  const r = table.group({
    prefix: V1_PREFIX,
    access: 'api-key',
    family: 'dsync',
    body: ['json'],
    bodyLimit: 'admin',
    wrap: [dataExceptionsAre400],
    tag: 'dsync',
  });
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
}

/**
 * Jackson's `GET /api/health`: `{ version }` (the package version, without a `v`) when ready,
 * 503 with the same body otherwise. No authentication, as in Jackson.
 */
export function jacksonHealthRoutes(r: Registrar, deps: HealthDeps): void {
  r.get('/api/health', async function jacksonHealth(ctx) {
    const errors = await deps.readiness();
    ctx.status = Object.keys(errors).length ? 503 : 200;
    ctx.body = { version: deps.version.replace(/^v/, '') };
  });
}
