/**
 * The OAuth 2.0 / OpenID Connect domain (Hydra-compatible). `createOAuth2` wires its services and
 * returns the routers for the public and admin listeners. No I/O happens here.
 */
import Router from '@koa/router';
import type { Core } from '../container.ts';

export interface OAuth2 {
  publicRouter: Router;
  adminRouter: Router;
}

export function createOAuth2(_core: Core): OAuth2 {
  const publicRouter = new Router();
  const adminRouter = new Router();
  return { publicRouter, adminRouter };
}
