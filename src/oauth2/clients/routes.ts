/**
 * Routes of the clients feature: the admin API (`/admin/clients…`) and dynamic client registration
 * on the public listener (`/oauth2/register…`).
 */
import type Router from '@koa/router';
import { clientHandlers } from './handlers.ts';
import { registrationHandlers } from './registration-handlers.ts';
import type { RegistrationService } from './registration.ts';
import type { ClientService } from './service.ts';

export function mountClientRoutes(
  routers: { admin: Router; public: Router },
  services: { clients: ClientService; registration: RegistrationService },
): void {
  const a = clientHandlers(services.clients);
  routers.admin
    .get('/admin/clients', a.listOAuth2Clients)
    .post('/admin/clients', a.createOAuth2Client)
    .get('/admin/clients/:id', a.getOAuth2Client)
    .put('/admin/clients/:id', a.setOAuth2Client)
    .patch('/admin/clients/:id', a.patchOAuth2Client)
    .delete('/admin/clients/:id', a.deleteOAuth2Client)
    .put('/admin/clients/:id/lifespans', a.setOAuth2ClientLifespans);

  const p = registrationHandlers(services.registration);
  const gate = p.requireDynamicRegistration;
  routers.public
    .post('/oauth2/register', gate, p.createOidcDynamicClient)
    .get('/oauth2/register/:id', gate, p.getOidcDynamicClient)
    .put('/oauth2/register/:id', gate, p.setOidcDynamicClient)
    .delete('/oauth2/register/:id', gate, p.deleteOidcDynamicClient);
}
