/**
 * The OAuth 2.0 / OpenID Connect domain (Hydra-compatible). `createOAuth2` wires its services and
 * returns the routers for the public and admin listeners. No I/O happens here.
 */
import Router from '@koa/router';
import type { Core } from '../container.ts';
import { type DiscoveryService, createDiscoveryService } from './discovery/service.ts';
import { registerDiscoveryRoutes } from './discovery/handlers.ts';
import { TtlLru } from './jwk/cache.ts';
import { registerJwkRoutes } from './jwk/handlers.ts';
import type { Jwk } from './jwk/keys.ts';
import { createKeyProvider, type KeyProvider } from './jwk/provider.ts';
import { createKeySealer } from './jwk/sealed.ts';
import { createJwkService, type JwkService } from './jwk/service.ts';
import { DEFAULT_NETWORK_ID } from '../core/db/schema.ts';
import { createRegistrationService, type RegistrationService } from './clients/registration.ts';
import { mountClientRoutes } from './clients/routes.ts';
import { type ClientService, createClientService } from './clients/service.ts';
import { clientPortOf, createFlowFeatures, type FlowFeatures, keyPortOf } from './flow-features.ts';
import { registerTrustRoutes } from './trust/handlers.ts';
import { createTrustService, type TrustService } from './trust/service.ts';
import { createJanitor, type Janitor } from './janitor/service.ts';
import type { PerClientCors } from '../core/http/cors.ts';
import { createPerClientCors } from './cors.ts';

export interface OAuth2 {
  publicRouter: Router;
  adminRouter: Router;
  /** Signing and verification keys for ID tokens, JWT access tokens and logout tokens. */
  keys: KeyProvider;
  jwks: JwkService;
  discovery: DiscoveryService;
  /** OAuth 2.0 clients: admin CRUD, `getClient`, `authenticateClient` (token endpoint). */
  clients: ClientService;
  /** OpenID Connect dynamic client registration. */
  registration: RegistrationService;
  /** Login/consent, authorization, token issuance, userinfo, introspection, revocation, consent sessions. */
  flows: FlowFeatures;
  /** Trusted issuers of the JWT bearer grant (RFC 7523). */
  trust: TrustService;
  /** Bounded-batch deletion of expired rows (`gatehouse janitor`, the `oauth2_janitor` task). */
  janitor: Janitor;
  /** `allowed_cors_origins` of the client behind a request (the public listener's CORS). */
  cors: PerClientCors;
}

export function createOAuth2(core: Core): OAuth2 {
  const publicRouter = new Router();
  const adminRouter = new Router();
  const { config, clock } = core;
  const nid = DEFAULT_NETWORK_ID;

  const sealer = createKeySealer(config.secrets.system, nid);
  const cacheCfg = config.db.jwk_cache;
  const cache = cacheCfg.enabled
    ? new TtlLru<Jwk[]>({ maxWeight: cacheCfg.size, ttlMs: cacheCfg.ttl, clock })
    : undefined;
  const keys = createKeyProvider({
    db: core.db,
    nid,
    sealer,
    clock,
    log: core.log,
    cache,
    changes: core.changes,
    broadcastSets: config.webfinger.jwks.broadcast_keys,
  });
  const jwks = createJwkService({ db: core.db, nid, sealer, clock, provider: keys });
  registerJwkRoutes(publicRouter, adminRouter, {
    service: jwks,
    provider: keys,
    issuer: config.urls.self.issuer,
    changes: core.changes,
  });
  const discovery = createDiscoveryService(config, keys);
  registerDiscoveryRoutes(publicRouter, discovery, core.changes);

  const clients = createClientService(core);
  const registration = createRegistrationService(core, clients);
  mountClientRoutes({ admin: adminRouter, public: publicRouter }, { clients, registration });
  const trust = createTrustService({ db: core.db, clock, config, nid, sealer });
  registerTrustRoutes(adminRouter, trust);
  const flows = createFlowFeatures(core, {
    clients: clientPortOf(clients),
    keys: keyPortOf(keys),
    trust,
    publicRouter,
    adminRouter,
  });
  const janitor = createJanitor({ db: core.db, clock, log: core.log, config });
  const cors = createPerClientCors({ clients, lookup: flows.lookup, now: () => clock.now() });
  return { publicRouter, adminRouter, keys, jwks, discovery, clients, registration, flows, trust, janitor, cors };
}
