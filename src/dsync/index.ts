/**
 * The directory-sync domain (Jackson-compatible). `createDsync` wires its services and returns the
 * routers: SCIM for identity providers on the public listener, the v1 management API on the admin
 * listener. No I/O happens here.
 */
import Router from '@koa/router';
import type { Core } from '../container.ts';

export interface Dsync {
  publicRouter: Router;
  adminRouter: Router;
}

export function createDsync(_core: Core): Dsync {
  const publicRouter = new Router();
  const adminRouter = new Router();
  return { publicRouter, adminRouter };
}
