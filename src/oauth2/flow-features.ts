/**
 * Wiring of the browser flow and the services built on it: login/consent, `/oauth2/auth`,
 * `/oauth2/token` (every grant), the device grant, `/userinfo`, verifiable credentials,
 * introspection, revocation, sessions and logout. Routes are registered from src/oauth2/routes.ts.
 */
import type { JWK } from 'jose';
import { cookieSecrets } from '../core/config/load.ts';
import { keyRing } from '../core/crypto/keys.ts';
import { createAddressFailureLimit } from '../core/http/auth-failures.ts';
import { jobsFor } from '../core/jobs/registry.ts';
import { createPushedRequests } from './authorize/pushed.ts';
import { createAuthorizeService } from './authorize/service.ts';
import { createClientOutbound } from './client-keys.ts';
import { type Client, LIFESPAN_FIELDS, type StoredClient, TLS_CLIENT_AUTH_FIELDS } from './clients/model.ts';
import { renderClient } from './clients/schemas.ts';
import type { ClientService } from './clients/service.ts';
import { createVcNonces } from './credentials/nonce.ts';
import { createCredentialsService } from './credentials/service.ts';
import type { OAuth2Deps } from './deps.ts';
import { createUserCodes } from './device/codes.ts';
import { createDeviceService } from './device/service.ts';
import { appendPath, parEndpoint, tokenEndpoint } from './discovery/service.ts';
import { createDpop } from './dpop.ts';
import { createFlowCodec } from './flows/challenge.ts';
import { createFlowCookies } from './flows/cookies.ts';
import { createFlowsService } from './flows/service.ts';
import { createIntrospectionService } from './introspect/service.ts';
import type { KeyProvider } from './jwk/provider.ts';
import { createLogoutCodec } from './logout/challenge.ts';
import { createLogoutChannels } from './logout/channels.ts';
import { createLogoutService } from './logout/service.ts';
import type { ClientPort, FlowClient, KeyPort, TlsClientAuthName } from './ports.ts';
import { createRevocationService } from './revoke/service.ts';
import { createSessionCodec } from './session-data.ts';
import { createSessionsService } from './sessions/service.ts';
import { oauth2Tasks } from './tasks.ts';
import { createTokenHook } from './token/hook.ts';
import { createTokenIssuer } from './token/issue.ts';
import { createTokenLookup } from './token/lookup.ts';
import { createTokenService } from './token/service.ts';
import type { TrustService } from './trust/service.ts';
import { createUserinfoService } from './userinfo/service.ts';

export function keyPortOf(provider: KeyProvider): KeyPort {
  return {
    signingKey: (set) => provider.getSigningKey(set),
    publicKeys: async (set) => (await provider.getVerificationKeys(set)).keys as JWK[],
  };
}

/** Wrong user codes of the device grant, counted per browser address (RFC 8628 §5.1). */
function userCodeAddressLimit(core: OAuth2Deps) {
  const limits = core.config.rate_limit.failed_auth;
  return createAddressFailureLimit(
    core.db,
    core.clock,
    { enabled: limits.enabled, window: limits.window, perAddress: limits.per_address_user_codes },
    'device_user_code',
    core.changes,
  );
}

export function createFlowFeatures(
  core: OAuth2Deps,
  deps: { clients: ClientPort; keys: KeyPort; trust: TrustService },
) {
  const { config, clock, db, changes } = core;
  const now = () => clock.now();
  const { clients, keys } = deps;
  const codec = createFlowCodec(keyRing(config.secrets.system, 'flow'), config.ttl.login_consent_request, now);
  const cookies = createFlowCookies(config, keyRing(cookieSecrets(config), 'cookie'), now);
  const sessions = createSessionCodec(keyRing(config.secrets.system, 'session'), config.oauth2.session.encrypt_at_rest);
  const hook = createTokenHook({ hook: config.oauth2.token_hook, fetch: core.fetch, log: core.log });
  const vcNonces = createVcNonces(keyRing(config.secrets.system, 'flow'), config.ttl.vc_nonce, now);
  const issuer = createTokenIssuer({ config, clock, keys, sessions, hook, vcNonces });

  const { audit } = core;
  const flows = createFlowsService({ db, clock, codec, clients, audit });
  const outbound = createClientOutbound({
    fetch: core.fetch,
    fetchDynamic: core.fetchDynamic,
    clock,
    log: core.log,
    ttlMs: config.oauth2.client_jwks.cache_ttl,
    minRefetchMs: config.oauth2.client_jwks.min_refetch_interval,
  });
  const authorizeDeps = { config, clock, db, outbound, codec, cookies, clients, keys, sessions, issuer };
  const tokenUrls = [...new Set([tokenEndpoint(config), appendPath(config.urls.self.issuer, 'oauth2/token')])];
  const clientAuth = {
    ...{ db, clock, clients, outbound, tokenUrls },
    assertionMaxTtlMs: config.oauth2.client_assertion.max_ttl,
  };
  // RFC 9126 §2: an assertion sent to the PAR endpoint may name it, the issuer or the token endpoint.
  const parAudiences = [...new Set([...tokenUrls, parEndpoint(config), config.urls.self.issuer])];
  const dpop = createDpop({ config, clock, db });
  const parDeps = { ...authorizeDeps, dpop, clientAuth: { ...clientAuth, tokenUrls: parAudiences } };
  const pushed = createPushedRequests(parDeps);
  const authorize = createAuthorizeService(authorizeDeps, pushed);

  const lookup = createTokenLookup({ config, clock, db, keys, changes });
  const token = createTokenService({
    dpop,
    lookup,
    changes,
    config,
    clock,
    db,
    sessions,
    issuer,
    audit: core.audit,
    trust: deps.trust,
    tokenUrls,
    clientAuth,
  });
  const device = createDeviceService({
    ...authorizeDeps,
    ring: keyRing(config.secrets.system, 'flow'),
    userCodes: createUserCodes(config),
    clientAuth,
    userCodeAddresses: userCodeAddressLimit(core),
  });
  const credentials = createCredentialsService({ config, clock, db, keys, sessions, nonces: vcNonces, dpop });
  const userinfo = createUserinfoService({ config, clock, db, clients, keys, sessions, dpop });
  const introspection = createIntrospectionService({ config, clock, lookup, sessions });
  const revocation = createRevocationService({ config, clock, db, lookup, clientAuth, audit, changes });
  const log = core.log;
  const channels = createLogoutChannels({
    jobs: jobsFor(oauth2Tasks, core.queue),
    config,
    clock,
    keys,
    clients,
    fetch: core.fetch,
    fetchDynamic: core.fetchDynamic,
    log,
  });
  const sessionDeps = { config, clock, db, clients, sessions, channels, log, audit, changes };
  const consentSessions = createSessionsService(sessionDeps);
  const logoutCodec = createLogoutCodec(keyRing(config.secrets.system, 'flow'), now);
  const logout = createLogoutService({
    config,
    clock,
    db,
    codec: logoutCodec,
    cookies,
    clients,
    keys,
    channels,
    log,
    audit,
  });

  return {
    flows,
    authorize,
    /** Pushed authorization requests (RFC 9126, `POST /oauth2/par`). */
    pushed,
    /** DPoP proofs (RFC 9449) and server nonces. */
    dpop,
    /** The device authorization grant (RFC 8628). */
    device,
    token,
    issuer,
    /** Verifiable credentials (`POST /credentials`). */
    credentials,
    userinfo,
    introspection,
    revocation,
    sessions: consentSessions,
    /** RP- and OP-initiated logout, the logout admin API. */
    logout,
    /** Front- and back-channel logout (the `oauth2_backchannel_logout` task delivers through it). */
    channels,
    logoutCodec,
    sessionCodec: sessions,
    /** Finds the stored record of a presented access or refresh token. */
    lookup,
    codec,
    cookies,
  };
}

export type FlowFeatures = ReturnType<typeof createFlowFeatures>;

/** The one `tls_client_auth_*` field a client registered (RFC 8705 §2.1.2), as the flows see it. */
function tlsClientAuthOf(c: Client): Pick<FlowClient, 'tlsClientAuth'> {
  const field = TLS_CLIENT_AUTH_FIELDS.find((f) => c[f] !== '');
  if (!field) return {};
  return { tlsClientAuth: { field: field.slice('tls_client_auth_'.length) as TlsClientAuthName, value: c[field] } };
}

/** The client service as the flows see it. */
export function clientPortOf(clients: ClientService): ClientPort {
  // The stored row behind each client handed out, so that the secret check reads no second time.
  const stored = new WeakMap<FlowClient, StoredClient>();
  const toFlowClient = (c: Client, dynamic: boolean): FlowClient => {
    let wire: Record<string, unknown> | undefined;
    return {
      id: c.client_id,
      redirectUris: c.redirect_uris ?? [],
      grantTypes: c.grant_types ?? [],
      responseTypes: c.response_types ?? [],
      scope: c.scope,
      audience: c.audience ?? [],
      tokenEndpointAuthMethod: c.token_endpoint_auth_method || 'client_secret_basic',
      tokenEndpointAuthSigningAlg: c.token_endpoint_auth_signing_alg,
      jwks: Array.isArray(c.jwks?.keys) ? { keys: c.jwks.keys as JWK[] } : undefined,
      jwksUri: c.jwks_uri,
      requestUris: c.request_uris ?? [],
      requestObjectSigningAlg: c.request_object_signing_alg,
      userinfoSignedResponseAlg: c.userinfo_signed_response_alg,
      subjectType: c.subject_type,
      sectorIdentifierUri: c.sector_identifier_uri,
      accessTokenStrategy: c.access_token_strategy,
      skipConsent: c.skip_consent,
      requirePushedAuthorizationRequests: c.require_pushed_authorization_requests,
      dpopBoundAccessTokens: c.dpop_bound_access_tokens,
      ...tlsClientAuthOf(c),
      tlsClientCertificateBoundAccessTokens: c.tls_client_certificate_bound_access_tokens,
      postLogoutRedirectUris: c.post_logout_redirect_uris ?? [],
      frontchannelLogoutUri: c.frontchannel_logout_uri,
      backchannelLogoutUri: c.backchannel_logout_uri,
      lifespans: Object.fromEntries(LIFESPAN_FIELDS.map((k) => [k, c[k]])),
      // Rendered when a flow first needs it (login and consent requests), not per token request.
      get wire() {
        wire ??= renderClient(c);
        return wire;
      },
      dynamic,
    };
  };
  // One flow view per stored client object: the client service hands out the same object while
  // its cache entry is valid, so a token request does not map the client again. Frozen: shared.
  const views = new WeakMap<StoredClient, FlowClient>();
  return {
    get: async (id) => {
      const s = await clients.findStored(id);
      if (!s) return undefined;
      let fc = views.get(s);
      if (!fc) {
        fc = Object.freeze(toFlowClient(s.client, s.dynamic ?? false));
        views.set(s, fc);
        stored.set(fc, s);
      }
      return fc;
    },
    verifySecret: async (client, secret) => clients.verifyStoredSecret(client && stored.get(client), secret),
  };
}
