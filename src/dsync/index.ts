/**
 * The directory-sync domain (Jackson-compatible), and its one public face: what the rest of the
 * program (the composition root, the server, the console, the library) may use. `createDsync` wires
 * its services (services.ts) and returns the routes: SCIM for identity providers on the public
 * listener, the v1 management API, and the Jackson-style library controller. No I/O happens here.
 * Task files declare their context in task-context.ts; nothing inside the domain imports this file.
 */

import { keyRing } from '../core/crypto/keys.ts';
import type { AdminCredentials } from '../core/http/admin-auth.ts';
import { cookiesSecure } from '../core/http/cookies.ts';
import type { ErrorFamilies } from '../core/http/errors.ts';
import { type DeclaredRoute, type Guard, RouteTable } from '../core/http/routes.ts';
import { type ControllerOptions, createDirectorySyncController, type DirectorySyncController } from './controller.ts';
import type { DsyncDeps } from './deps.ts';
import { type DsyncAccess, dsyncGuards, errorFamilies, publicRoutes, v1Routes } from './routes.ts';
import { createDsyncServices, type DsyncOptions, type DsyncServices } from './services.ts';

export type { DsyncOptions, DsyncServices };

export interface Dsync {
  /** Routes with their policies: the public listener's, and the v1 API's (on the listener `dsync.api.listener` names). */
  routes: { public: readonly DeclaredRoute[]; v1: readonly DeclaredRoute[] };
  /**
   * The guards of its access names; `admin`: the admin credentials of `serve.admin.auth` (undefined
   * while it is off), which the v1 API takes beside its Api-Key.
   */
  guards(admin: AdminCredentials | undefined): Record<DsyncAccess, Guard>;
  /** Error renderers and their path prefixes, registered with the apps (see core/http/errors.ts). */
  errorFamilies: ErrorFamilies;
  services: DsyncServices;
  /** A Jackson-style controller over these services (`callback`: Jackson's `dsync.callback`). */
  controller(opts?: Omit<ControllerOptions, 'log'>): DirectorySyncController;
}

export function createDsync(core: DsyncDeps, opts: DsyncOptions = {}): Dsync {
  const services = createDsyncServices(core, opts);
  const google = {
    authorizePath: core.config.dsync.google.authorize_path,
    callbackPath: core.config.dsync.google.callback_path,
    secureCookies: cookiesSecure(core.config),
  };
  const pub = new RouteTable();
  publicRoutes(pub, services, google, {
    csrfRing: keyRing(core.config.secrets.system, 'setup_page'),
    externalUrl: core.config.dsync.external_url,
  });
  const v1 = new RouteTable();
  v1Routes(v1, services);
  return {
    routes: { public: pub.routes, v1: v1.routes },
    guards: (admin) => dsyncGuards(services, core.config.dsync.api_keys, admin),
    errorFamilies: errorFamilies(google),
    services,
    controller: (o = {}) => createDirectorySyncController(services, { log: core.log, ...o }),
  };
}

// ---- What the composition root registers ------------------------------------------------
// Each registry of the core gets the domain's entries here: the composition root registers the
// values (src/config.ts, src/container.ts, src/task-registry.ts) and declares their names to the
// core's types (`ConfigSpecs`, `AuditTypes`, `Metrics`), which name no domain themselves.

export { DSYNC_AUDIT_TYPES } from './audit.ts';
export { DSYNC_CONFIG } from './config.ts';
export { DSYNC_KEY_PURPOSES } from './keys.ts';
export { dsyncMetrics } from './metrics.ts';
/** Jackson's health route (`GET /api/health`), which the server registers on both listeners. */
/** The admin API family of the v1 API (`gatehouse:admin:dsync`). */
export { DSYNC_ADMIN_FAMILIES, jacksonHealthRoutes } from './routes.ts';
/** Its tables, which `src/database.ts` joins with the others into the program's `Database`. */
export { DSYNC_TABLE_COLUMNS, type DsyncTables } from './tables.ts';
export { dsyncTasks } from './tasks.ts';

// ---- What the console uses beside the services ----------------------------------------------
// The directory types, the id check, and the tasks that post webhooks (a directory's sender, the
// lifecycle webhook), whose failed jobs the console lists and retries.

export { LIFECYCLE_TASK } from './events/lifecycle.ts';
export { DELIVER_TASK } from './events/service.ts';
export type { SetupLink } from './setup-links.ts';
export { DIRECTORY_TYPES, type DirectoryRecord, isUuid, type WebhookEvent } from './types.ts';
