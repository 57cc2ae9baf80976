/**
 * The OAuth 2.0 / OpenID Connect domain (Hydra-compatible), and its one public face: what the rest
 * of the program (the composition root, the server, the console, the library) may use. `createOAuth2`
 * wires its services and returns the routes of the public and admin listeners. No I/O happens here.
 * Task files declare their context in task-context.ts; nothing inside the domain imports this file.
 */

import type { PerClientCors } from '../core/http/cors.ts';
import type { ErrorFamilies } from '../core/http/errors.ts';
import type { RouteDoc } from '../core/http/openapi.ts';
import { bearerToken } from '../core/http/params.ts';
import { DOCUMENT_CACHE_CONTROL, type PreparedRoute, preparedCache } from '../core/http/prepared.ts';
import { type DeclaredRoute, type Guard, RouteTable } from '../core/http/routes.ts';
import { jobsFor } from '../core/jobs/registry.ts';
import { authorizeHandlers } from './authorize/handlers.ts';
import { clientHandlers } from './clients/handlers.ts';
import type { ClientDraft } from './clients/model.ts';
import { createRegistrationService, type RegistrationService } from './clients/registration.ts';
import { registrationHandlers } from './clients/registration-handlers.ts';
import { clientBody, decodeBody, toDraft } from './clients/schemas.ts';
import { type ClientService, createClientService } from './clients/service.ts';
import { createPerClientCors } from './cors.ts';
import { credentialHandlers } from './credentials/handlers.ts';
import type { OAuth2Deps } from './deps.ts';
import { devUiRoutes } from './dev-ui.ts';
import { deviceHandlers } from './device/handlers.ts';
import { discoveryHandlers } from './discovery/handlers.ts';
import { createDiscoveryService, type DiscoveryService } from './discovery/service.ts';
import { fallbackHandlers } from './fallbacks.ts';
import { clientPortOf, createFlowFeatures, type FlowFeatures, keyPortOf } from './flow-features.ts';
import { flowHandlers } from './flows/handlers.ts';
import { introspectionHandlers } from './introspect/handlers.ts';
import { createJanitor, type Janitor } from './janitor/service.ts';
import { TtlLru } from './jwk/cache.ts';
import { jwkHandlers } from './jwk/handlers.ts';
import type { Jwk } from './jwk/keys.ts';
import { createKeyProvider, type KeyProvider } from './jwk/provider.ts';
import { createKeySealer } from './jwk/sealed.ts';
import { createJwkService, type JwkService } from './jwk/service.ts';
import { logoutHandlers } from './logout/handlers.ts';
import { createClientCertificates } from './mtls.ts';
import { OAUTH2_ERROR_FAMILIES } from './oauth-errors.ts';
import { revocationHandlers } from './revoke/handlers.ts';
import { mountOAuth2Routes, OAUTH2_ROUTES, type OAuth2Access } from './routes.ts';
import { sessionHandlers } from './sessions/handlers.ts';
import { DEFAULT_NETWORK_ID } from './tables.ts';
import { oauth2Tasks } from './tasks.ts';
import { tokenHandlers } from './token/handlers.ts';
import { createMachineCallers, type MachineCallers } from './token/machine-caller.ts';
import { trustHandlers } from './trust/handlers.ts';
import { createTrustService, type TrustService } from './trust/service.ts';
import { userinfoHandlers } from './userinfo/handlers.ts';

export interface OAuth2 {
  /**
   * Every route of the domain per listener, with its policy (the table in routes.ts), and the
   * development login, consent and logout pages (`dev_ui.enabled`; none otherwise) of the public one.
   */
  routes: { public: readonly DeclaredRoute[]; admin: readonly DeclaredRoute[]; dev: readonly DeclaredRoute[] };
  /** The OpenAPI entries of the route table per listener (richer than those a declared route gives). */
  routeDocs: { public: readonly RouteDoc[]; admin: readonly RouteDoc[] };
  /** The guards of the access names the routes use (`admin` is the server's). */
  guards: Record<Exclude<OAuth2Access, 'public' | 'admin'>, Guard>;
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
  /** The client behind an active client_credentials access token (the admin API's token credential). */
  machineCaller: MachineCallers;
  /** Bounded-batch deletion of expired rows (`gatehouse janitor`, the `oauth2_janitor` task). */
  janitor: Janitor;
  /** `allowed_cors_origins` of the client behind a request (the public listener's CORS). */
  cors: PerClientCors;
  /** Error renderers and their path prefixes, registered with the apps (see core/http/errors.ts). */
  errorFamilies: ErrorFamilies;
  /** The discovery and JWKS documents, answered before the public listener's Koa chain while prepared. */
  preparedRoutes: PreparedRoute[];
}

/** The public GET paths of a handler in the route table (a handler may serve several, as discovery does). */
const publicPathsOf = (handler: string) =>
  OAUTH2_ROUTES.filter(
    (r) => r.listener === 'public' && r.method === 'get' && (r.handler ?? r.operationId) === handler,
  ).map((r) => r.path);

export function createOAuth2(core: OAuth2Deps): OAuth2 {
  const tables = { public: new RouteTable(), admin: new RouteTable() };
  const { config, clock } = core;
  const sealer = createKeySealer(config.secrets.system, DEFAULT_NETWORK_ID);
  const cacheCfg = config.db.jwk_cache;
  const cache = cacheCfg.enabled
    ? new TtlLru<Jwk[]>({ maxWeight: cacheCfg.size, ttlMs: cacheCfg.ttl, clock })
    : undefined;
  const keys = createKeyProvider({
    db: core.db,
    sealer,
    clock,
    log: core.log,
    cache,
    changes: core.changes,
    broadcastSets: config.webfinger.jwks.broadcast_keys,
  });
  const jwks = createJwkService({ db: core.db, sealer, clock, provider: keys, audit: core.audit });
  const discovery = createDiscoveryService(config, keys);
  // Both documents depend on the keys (discovery on the ID-token signing algorithm) and on the
  // configuration, which is fixed per process: they are rebuilt when a key of any process changes.
  const publicJwks = preparedCache(core.changes, 'jwk', () => keys.getPublicJwks());
  const discoveryDocument = preparedCache(core.changes, 'jwk', () => discovery.getConfiguration());

  const clients = createClientService(core);
  const registration = createRegistrationService(core, clients);
  const trust = createTrustService({ db: core.db, clock, config, sealer, audit: core.audit });
  const clientPort = clientPortOf(clients);
  const flows = createFlowFeatures(core, {
    clients: clientPort,
    keys: keyPortOf(keys),
    trust,
  });
  const janitor = createJanitor({
    db: core.db,
    jobs: jobsFor(oauth2Tasks, core.queue),
    clock,
    log: core.log,
    config,
    changes: core.changes,
  });
  const dcr = registrationHandlers(registration);
  // The client certificate of a request (RFC 8705), for client authentication and bound tokens.
  const certificates = createClientCertificates({ config, clock });
  const f = flows;
  mountOAuth2Routes(
    {
      public: tables.public.group({ access: 'public', tag: 'oauth2' }),
      admin: tables.admin.group({ access: 'admin', tag: 'oauth2' }),
    },
    {
      ...jwkHandlers({ service: jwks, issuer: config.urls.self.issuer, publicJwks }),
      ...discoveryHandlers(discoveryDocument),
      ...clientHandlers(clients),
      createOidcDynamicClient: dcr.createOidcDynamicClient,
      getOidcDynamicClient: dcr.getOidcDynamicClient,
      setOidcDynamicClient: dcr.setOidcDynamicClient,
      deleteOidcDynamicClient: dcr.deleteOidcDynamicClient,
      ...trustHandlers(trust),
      ...flowHandlers(f.flows),
      ...authorizeHandlers(f.authorize, f.pushed, config, certificates),
      ...deviceHandlers(f.device, config, certificates),
      ...tokenHandlers(f.token, config.oauth2.expose_internal_errors, f.dpop.nonce, certificates),
      ...credentialHandlers(f.credentials, certificates),
      ...userinfoHandlers(f.userinfo, certificates),
      ...introspectionHandlers(f.introspection),
      ...revocationHandlers(f.revocation, certificates),
      ...sessionHandlers(f.sessions),
      ...logoutHandlers(f.logout, config),
      ...fallbackHandlers(),
    },
  );
  // They answer the challenges in-process, through the services of the admin API's flow routes:
  // no admin credential, no call to the admin listener (dev-ui.ts).
  const dev = new RouteTable();
  const client = async (id: string) => (await clientPort.get(id))?.wire;
  if (config.dev_ui.enabled) devUiRoutes(dev, { config, services: { ...f, client } });
  const cors = createPerClientCors({ clients, lookup: flows.lookup, now: () => clock.now() });
  const guards: OAuth2['guards'] = {
    client: {
      description:
        'An OAuth 2.0 client, authenticated by the endpoint (RFC 6749 §2.3: client_secret_basic, client_secret_post, private_key_jwt, RFC 8705 tls_client_auth or self_signed_tls_client_auth, or none for public clients); failures are rate limited.',
    },
    'access-token': { description: 'An access token (RFC 6750), verified by the endpoint.' },
    'dynamic-registration': {
      description: 'Anyone, while `oidc.dynamic_client_registration.enabled` (404 otherwise).',
      check: dcr.requireDynamicRegistration,
    },
    'registration-token': {
      description: "The client's registration access token (RFC 7592 §3), while dynamic registration is enabled.",
      async check(ctx, next) {
        await registration.get((ctx.params as { id: string }).id, bearerToken(ctx.get('authorization')));
        await next();
      },
    },
  };
  return {
    routes: { public: tables.public.routes, admin: tables.admin.routes, dev: dev.routes },
    routeDocs: {
      public: OAUTH2_ROUTES.filter((r) => r.listener === 'public'),
      admin: OAUTH2_ROUTES.filter((r) => r.listener === 'admin'),
    },
    guards,
    keys,
    jwks,
    discovery,
    clients,
    registration,
    flows,
    trust,
    machineCaller: createMachineCallers({ clock, lookup: flows.lookup, sessions: flows.sessionCodec }),
    janitor,
    cors,
    errorFamilies: OAUTH2_ERROR_FAMILIES,
    preparedRoutes: [
      ...publicPathsOf('discoverJsonWebKeys').map((path) => ({ path, document: publicJwks })),
      ...publicPathsOf('discoverOidcConfiguration').map((path) => ({ path, document: discoveryDocument })),
    ].map((r) => ({ ...r, cacheControl: DOCUMENT_CACHE_CONTROL })),
  };
}

// ---- What the composition root registers ------------------------------------------------
// Each registry of the core gets the domain's entries here: the composition root registers the
// values (src/config.ts, src/container.ts, src/task-registry.ts) and declares their names to the
// core's types (`ConfigSpecs`, `AuditTypes`, `Metrics`), which name no domain themselves.

export { OAUTH2_AUDIT_TYPES } from './audit.ts';
export { DEFAULT_DEV_USERS, OAUTH2_CONFIG } from './config.ts';
export { oauth2Metrics } from './metrics.ts';
/** The public listener's TLS options for client certificates (RFC 8705, `oauth2.mtls`). */
export { clientCertificateRequest } from './mtls-config.ts';
/** Its tables, which `src/database.ts` joins with the others into the program's `Database`. */
export { OAUTH2_TABLE_COLUMNS, type OAuth2Tables } from './tables.ts';
export { oauth2Tasks } from './tasks.ts';

// ---- What the console calls beside the services ---------------------------------------------

/** A client draft from a body of the admin API's shape: the checks of `POST /admin/clients` (400 on a bad field). */
export const clientDraft = (body: unknown): ClientDraft => toDraft(decodeBody(clientBody, body));
/** A client as the admin API answers it. */
export { renderClient } from './clients/schemas.ts';
/** A new client secret, as `POST /admin/clients` generates one. */
export { generateSecret as generateClientSecret } from './clients/secrets.ts';
/** A trust relationship from a body of the admin API's shape (`POST /admin/trust/grants/jwt-bearer/issuers`). */
export { decodeTrustBody } from './trust/schemas.ts';
