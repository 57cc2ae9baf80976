/**
 * The OAuth 2.0 / OpenID Connect domain (Hydra-compatible). `createOAuth2` wires its services and
 * returns the routers for the public and admin listeners. No I/O happens here.
 */
import Router from '@koa/router';
import type { Core } from '../container.ts';
import { createRegistrationService, type RegistrationService } from './clients/registration.ts';
import { mountClientRoutes } from './clients/routes.ts';
import { type ClientService, createClientService } from './clients/service.ts';

export interface OAuth2 {
  publicRouter: Router;
  adminRouter: Router;
  /** OAuth 2.0 clients: admin CRUD, `getClient`, `authenticateClient` (token endpoint). */
  clients: ClientService;
  /** OpenID Connect dynamic client registration. */
  registration: RegistrationService;
}

export function createOAuth2(core: Core): OAuth2 {
  const publicRouter = new Router();
  const adminRouter = new Router();
  const clients = createClientService(core);
  const registration = createRegistrationService(core, clients);
  mountClientRoutes({ admin: adminRouter, public: publicRouter }, { clients, registration });
  return { publicRouter, adminRouter, clients, registration };
}
