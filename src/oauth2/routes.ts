/**
 * Every route of the OAuth 2.0 / OpenID Connect domain, on both listeners, in one table: method,
 * path, Hydra's operation id, the handler that serves it, and the zod schemas of what it reads and
 * answers. `mountOAuth2Routes` registers the table on the routers; the OpenAPI documents
 * (`/.well-known/openapi.json`, `/admin/openapi.json`) are generated from the same table, so a route
 * cannot be served without being documented.
 */
import type { Middleware } from 'koa';
import { z } from 'zod';
import type { AdminFamily } from '../core/http/admin-auth.ts';
import type { RouteDoc } from '../core/http/openapi.ts';
import type { BodyType, Registrar, RoutePolicy } from '../core/http/routes.ts';
import { clientBody, lifespansBody } from './clients/schemas.ts';
import { createVerifiableCredentialBody } from './credentials/service.ts';
import { acceptDeviceUserCodeBody } from './device/handlers.ts';
import { oauth2FailedAuthTarget } from './failed-auth.ts';
import { acceptConsentBody, acceptLoginBody, rejectBody } from './flows/schemas.ts';
import { createJsonWebKeySetBody, jsonWebKeyBody, jsonWebKeySetBody } from './jwk/schemas.ts';
import { trustBody } from './trust/schemas.ts';

export type Listener = 'public' | 'admin';

export interface OAuth2Route extends RouteDoc {
  listener: Listener;
  /** Key of the handler in the handler map; the operation id when absent. */
  handler?: string;
  /** Who may call (core/http/routes.ts): `admin` on the admin listener, `public` on the public one, unless given. */
  access?: OAuth2Access;
  /** Body types taken; the documented body's type when absent. */
  accepts?: readonly BodyType[];
  /** Also allows the origins of the client behind the request (Hydra's OAuth2-aware CORS). */
  perClientCors?: true;
  /** Failed client authentications are counted per claimed client and per address. */
  limited?: true;
  /** Admin routes: the family whose scope the admin API's guard requires (core/http/admin-auth.ts). */
  family?: AdminFamily;
}

/**
 * The access names of this domain: `client` (OAuth 2.0 client authentication at the endpoint, RFC
 * 6749 §2.3), `access-token` (an access token, RFC 6750), `dynamic-registration` (open while
 * dynamic registration is on), `registration-token` (RFC 7592 §3), `admin` (the admin API).
 */
export type OAuth2Access =
  | 'public'
  | 'client'
  | 'access-token'
  | 'dynamic-registration'
  | 'registration-token'
  | 'admin';

// ---- wire shapes (documentation; the handlers decode with the schemas imported above) ----------

const obj = z.record(z.string(), z.unknown());
const errorOAuth2 = z.object({
  error: z.string(),
  error_description: z.string().optional(),
});
const redirectTo = z.object({ redirect_to: z.string() });
const tokenForm = z.looseObject({
  grant_type: z.string(),
  code: z.string().optional(),
  redirect_uri: z.string().optional(),
  code_verifier: z.string().optional(),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
  audience: z.string().optional(),
  assertion: z.string().optional(),
  device_code: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  client_assertion: z.string().optional(),
  client_assertion_type: z.string().optional(),
});
const tokenResponse = z.object({
  access_token: z.string(),
  token_type: z.string(),
  expires_in: z.number(),
  scope: z.string(),
  refresh_token: z.string().optional(),
  id_token: z.string().optional(),
  c_nonce_draft_00: z.string().optional(),
  c_nonce_expires_in_draft_00: z.number().optional(),
});
const parForm = z.looseObject({
  client_id: z.string().optional(),
  response_type: z.string().optional(),
  redirect_uri: z.string().optional(),
  scope: z.string().optional(),
  state: z.string().optional(),
  request: z.string().optional(),
  client_secret: z.string().optional(),
  client_assertion: z.string().optional(),
  client_assertion_type: z.string().optional(),
});
const parResponse = z.object({ request_uri: z.string(), expires_in: z.number() });
const deviceForm = z.looseObject({
  client_id: z.string(),
  scope: z.string().optional(),
  audience: z.string().optional(),
  client_secret: z.string().optional(),
});
const deviceAuthorization = z.object({
  device_code: z.string(),
  user_code: z.string(),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  expires_in: z.number(),
  interval: z.number(),
});
const revokeForm = z.looseObject({
  token: z.string(),
  token_type_hint: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});
const introspectForm = z.looseObject({ token: z.string(), scope: z.string().optional() });
const introspection = z.looseObject({
  active: z.boolean(),
  scope: z.string().optional(),
  client_id: z.string().optional(),
  sub: z.string().optional(),
  exp: z.number().optional(),
  iat: z.number().optional(),
  aud: z.array(z.string()).optional(),
  token_use: z.string().optional(),
});
const credentialResponse = z.object({ format: z.string(), credential_draft_00: z.string() });
const jwks = z.object({ keys: z.array(obj) });

const q = (name: string, description: string, required = false) => ({ name, description, required });
const json = (description: string, schema: z.ZodType = obj) => ({ description, schema });
const noContent = { description: 'No content.' };
const err = { default: json('An OAuth 2.0 / Hydra error.', errorOAuth2) };
const redirect = (description: string) => ({ 302: { description } });
const html = (description: string) => ({ description, contentType: 'text/html' });

const publicRoute = (r: Omit<OAuth2Route, 'listener'>): OAuth2Route => ({ listener: 'public', ...r });
/** An admin route names its family: the admin API's guard requires that family's scope. */
const adminRoute = (r: Omit<OAuth2Route, 'listener'> & { family: AdminFamily }): OAuth2Route => ({
  listener: 'admin',
  ...r,
});

const fallback = (path: string, operationId: string, key: string): OAuth2Route =>
  publicRoute({
    method: 'get',
    path,
    operationId,
    tags: ['fallbacks'],
    summary: `Fallback page shown while \`${key}\` is not set.`,
    responses: { 200: html('An HTML page naming the missing configuration key.') },
  });

export const OAUTH2_ROUTES: readonly OAuth2Route[] = [
  // --- discovery and keys (public)
  publicRoute({
    method: 'get',
    path: '/.well-known/openid-configuration',
    operationId: 'discoverOidcConfiguration',
    perClientCors: true,
    tags: ['oidc'],
    summary: 'OpenID Connect discovery.',
    responses: { 200: json('The discovery document.'), ...err },
  }),
  publicRoute({
    method: 'get',
    path: '/.well-known/oauth-authorization-server',
    operationId: 'discoverOAuth2AuthorizationServerMetadata',
    perClientCors: true,
    handler: 'discoverOidcConfiguration',
    tags: ['oidc'],
    summary: 'OAuth 2.0 authorization server metadata (RFC 8414): the discovery document.',
    responses: { 200: json('The discovery document.'), ...err },
  }),
  publicRoute({
    method: 'get',
    path: '/.well-known/jwks.json',
    operationId: 'discoverJsonWebKeys',
    perClientCors: true,
    tags: ['wellknown'],
    summary: 'Public keys of the sets in `webfinger.jwks.broadcast_keys`.',
    responses: { 200: json('A JSON Web Key Set.', jwks), ...err },
  }),
  // --- browser flows (public)
  ...(['get', 'post'] as const).map((method) =>
    publicRoute({
      method,
      path: '/oauth2/auth',
      operationId: method === 'get' ? 'oAuth2Authorize' : 'oAuth2AuthorizePost',
      accepts: ['form'],
      handler: 'oAuth2Authorize',
      tags: ['oAuth2'],
      summary: 'OAuth 2.0 authorization endpoint: starts or continues the login and consent flow.',
      query: [
        q('client_id', 'The client.'),
        q('response_type', 'code, token, id_token or a combination.'),
        q('redirect_uri', 'A registered redirect URI.'),
        q('scope', 'Space-separated scopes.'),
        q('state', 'Opaque value returned to the client.'),
        q('login_verifier', 'Set by the login UI’s redirect.'),
        q('consent_verifier', 'Set by the consent UI’s redirect.'),
      ],
      responses: {
        ...redirect('To the login or consent UI, the client, or the error page.'),
        200: html('A self-submitting form (response_mode=form_post).'),
      },
    }),
  ),
  publicRoute({
    method: 'post',
    path: '/oauth2/token',
    operationId: 'oauth2TokenExchange',
    access: 'client',
    perClientCors: true,
    limited: true,
    tags: ['oAuth2'],
    summary:
      'Token endpoint: authorization_code, refresh_token, client_credentials, jwt-bearer and device_code grants.',
    security: ['basic', 'none'],
    body: { type: 'form', schema: tokenForm },
    responses: { 200: json('Tokens.', tokenResponse), ...err },
  }),
  publicRoute({
    method: 'post',
    path: '/oauth2/par',
    operationId: 'pushAuthorizationRequest',
    access: 'client',
    perClientCors: true,
    limited: true,
    tags: ['oAuth2'],
    summary:
      'Pushed authorization request (RFC 9126): stores an authorization request and answers the request_uri that starts it at /oauth2/auth (404 while oauth2.pushed_authorization_requests.enabled is off).',
    security: ['basic', 'none'],
    body: { type: 'form', schema: parForm },
    responses: { 201: json('The request_uri and its lifetime in seconds.', parResponse), ...err },
  }),
  publicRoute({
    method: 'post',
    path: '/oauth2/device/auth',
    operationId: 'oAuth2DeviceFlow',
    access: 'client',
    limited: true,
    tags: ['oAuth2'],
    summary: 'Device authorization request (RFC 8628 §3.1).',
    security: ['basic', 'none'],
    body: { type: 'form', schema: deviceForm },
    responses: { 200: json('Device and user codes.', deviceAuthorization), ...err },
  }),
  publicRoute({
    method: 'get',
    path: '/oauth2/device/verify',
    operationId: 'performOAuth2DeviceVerificationFlow',
    tags: ['oAuth2'],
    summary: 'Device verification: starts or continues the browser part of the device flow.',
    query: [
      q('user_code', 'Passed on to the verification UI.'),
      q('device_verifier', 'Set by acceptUserCodeRequest.'),
      q('login_verifier', 'Set by the login UI’s redirect.'),
      q('consent_verifier', 'Set by the consent UI’s redirect.'),
      q('client_id', 'The device’s client.'),
    ],
    responses: { ...redirect('To the verification, login or consent UI, or the success page.'), ...err },
  }),
  publicRoute({
    method: 'post',
    path: '/oauth2/revoke',
    operationId: 'revokeOAuth2Token',
    access: 'client',
    perClientCors: true,
    limited: true,
    tags: ['oAuth2'],
    summary: 'Token revocation (RFC 7009).',
    security: ['basic', 'none'],
    body: { type: 'form', schema: revokeForm },
    responses: { 200: { description: 'Revoked (or unknown).' }, ...err },
  }),
  publicRoute({
    method: 'get',
    path: '/oauth2/revoke',
    operationId: 'revokeOAuth2TokenWrongMethod',
    handler: 'revokeOAuth2Token',
    tags: ['oAuth2'],
    deprecated: true,
    summary: 'Not a revocation: answers 400 invalid_request (only POST revokes), as fosite does.',
    responses: { ...err },
  }),
  ...(['get', 'post'] as const).map((method) =>
    publicRoute({
      method,
      path: '/userinfo',
      operationId: method === 'get' ? 'getOidcUserInfo' : 'getOidcUserInfoPost',
      access: 'access-token',
      perClientCors: true,
      accepts: ['form'],
      handler: 'getOidcUserInfo',
      tags: ['oidc'],
      summary: 'OpenID Connect UserInfo.',
      security: ['bearer'],
      responses: {
        200: { description: 'Claims (JSON, or a JWT for clients with userinfo_signed_response_alg).', schema: obj },
        ...err,
      },
    }),
  ),
  publicRoute({
    method: 'post',
    path: '/credentials',
    operationId: 'createVerifiableCredential',
    access: 'access-token',
    perClientCors: true,
    tags: ['oidc'],
    summary: 'Issues a verifiable credential (OpenID4VCI draft 00, as Hydra).',
    security: ['bearer'],
    body: { type: 'json', schema: createVerifiableCredentialBody },
    responses: {
      200: json('The credential.', credentialResponse),
      400: json('missing_proof (with a c_nonce) or invalid_request.'),
      ...err,
    },
  }),
  ...(['get', 'post'] as const).map((method) =>
    publicRoute({
      method,
      path: '/oauth2/sessions/logout',
      operationId: method === 'get' ? 'revokeOidcSession' : 'revokeOidcSessionPost',
      accepts: ['form'],
      handler: 'revokeOidcSession',
      tags: ['oidc'],
      summary: 'OpenID Connect RP-initiated logout.',
      query: [
        q('id_token_hint', 'An ID token of the session.'),
        q('post_logout_redirect_uri', 'A registered post-logout redirect URI.'),
        q('state', 'Returned with the redirect.'),
        q('logout_verifier', 'Set by the logout UI’s redirect.'),
      ],
      responses: { ...redirect('To the logout UI, the client or the error page.'), 200: html('Front-channel page.') },
    }),
  ),
  // --- dynamic client registration (public)
  publicRoute({
    method: 'post',
    path: '/oauth2/register',
    operationId: 'createOidcDynamicClient',
    access: 'dynamic-registration',
    tags: ['oidc'],
    summary: 'OpenID Connect dynamic client registration (when enabled).',
    body: { type: 'json', schema: clientBody },
    responses: { 201: json('The client, with its secret and registration token.'), ...err },
  }),
  ...(
    [
      ['get', 'getOidcDynamicClient', 'Reads a dynamically registered client.'],
      ['put', 'setOidcDynamicClient', 'Replaces a dynamically registered client.'],
      ['delete', 'deleteOidcDynamicClient', 'Deletes a dynamically registered client.'],
    ] as const
  ).map(([method, operationId, summary]) =>
    publicRoute({
      method,
      path: '/oauth2/register/:id',
      operationId,
      access: 'registration-token',
      tags: ['oidc'],
      summary,
      security: ['bearer'],
      ...(method === 'put' ? { body: { type: 'json' as const, schema: clientBody } } : {}),
      responses: method === 'delete' ? { 204: noContent, ...err } : { 200: json('The client.'), ...err },
    }),
  ),
  // --- fallback pages (public)
  fallback('/oauth2/fallbacks/login', 'fallbackLogin', 'urls.login'),
  fallback('/oauth2/fallbacks/consent', 'fallbackConsent', 'urls.consent'),
  fallback('/oauth2/fallbacks/logout', 'fallbackLogout', 'urls.logout'),
  fallback('/oauth2/fallbacks/logout/callback', 'fallbackPostLogout', 'urls.post_logout_redirect'),
  fallback('/oauth2/fallbacks/device', 'fallbackDevice', 'urls.device.verification'),
  fallback('/oauth2/fallbacks/device/done', 'fallbackDeviceDone', 'urls.device.success'),
  publicRoute({
    method: 'get',
    path: '/oauth2/fallbacks/error',
    operationId: 'fallbackError',
    tags: ['fallbacks'],
    summary: 'Error page shown while `urls.error` is not set (500, lists the error parameters).',
    query: [q('error', 'Error code.'), q('error_description', 'Description.')],
    responses: { 500: html('The error.') },
  }),

  // --- clients (admin)
  adminRoute({
    method: 'get',
    path: '/admin/clients',
    family: 'clients',
    operationId: 'listOAuth2Clients',
    tags: ['oAuth2'],
    summary: 'Lists clients (paginated; Link header).',
    query: [q('page_size', 'Items per page.'), q('page_token', 'Page token.'), q('client_name', ''), q('owner', '')],
    responses: { 200: json('Clients.', z.array(obj)), ...err },
  }),
  adminRoute({
    method: 'post',
    path: '/admin/clients',
    family: 'clients',
    operationId: 'createOAuth2Client',
    tags: ['oAuth2'],
    summary: 'Creates a client.',
    body: { type: 'json', schema: clientBody },
    responses: { 201: json('The client (with its secret).'), ...err },
  }),
  adminRoute({
    method: 'get',
    path: '/admin/clients/:id',
    family: 'clients',
    operationId: 'getOAuth2Client',
    tags: ['oAuth2'],
    summary: 'Reads a client.',
    responses: { 200: json('The client.'), ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/clients/:id',
    family: 'clients',
    operationId: 'setOAuth2Client',
    tags: ['oAuth2'],
    summary: 'Replaces a client.',
    body: { type: 'json', schema: clientBody },
    responses: { 200: json('The client.'), ...err },
  }),
  adminRoute({
    method: 'patch',
    path: '/admin/clients/:id',
    family: 'clients',
    operationId: 'patchOAuth2Client',
    accepts: ['json', 'json-patch'],
    tags: ['oAuth2'],
    summary: 'Patches a client (RFC 6902 JSON Patch).',
    body: { type: 'json', schema: z.array(obj) },
    responses: { 200: json('The client.'), ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/clients/:id',
    family: 'clients',
    operationId: 'deleteOAuth2Client',
    tags: ['oAuth2'],
    summary: 'Deletes a client and its tokens.',
    responses: { 204: noContent, ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/clients/:id/lifespans',
    family: 'clients',
    operationId: 'setOAuth2ClientLifespans',
    tags: ['oAuth2'],
    summary: 'Sets a client’s per-grant token lifespans.',
    body: { type: 'json', schema: lifespansBody },
    responses: { 200: json('The client.'), ...err },
  }),
  // --- login, consent, logout and device requests (admin)
  ...(
    [
      ['login', acceptLoginBody],
      ['consent', acceptConsentBody],
    ] as const
  ).flatMap(([kind, acceptBody]) => {
    const Kind = kind === 'login' ? 'Login' : 'Consent';
    const challenge = [q(`${kind}_challenge`, `The ${kind} challenge.`, true)];
    return [
      adminRoute({
        method: 'get',
        path: `/admin/oauth2/auth/requests/${kind}`,
        family: 'flows',
        operationId: `getOAuth2${Kind}Request`,
        tags: ['oAuth2'],
        summary: `Reads a ${kind} request.`,
        query: challenge,
        responses: { 200: json(`The ${kind} request.`), 410: json('Already handled.', redirectTo), ...err },
      }),
      adminRoute({
        method: 'put',
        path: `/admin/oauth2/auth/requests/${kind}/accept`,
        family: 'flows',
        operationId: `acceptOAuth2${Kind}Request`,
        tags: ['oAuth2'],
        summary: `Accepts a ${kind} request.`,
        query: challenge,
        body: { type: 'json', schema: acceptBody },
        responses: { 200: json('Where to send the browser.', redirectTo), ...err },
      }),
      adminRoute({
        method: 'put',
        path: `/admin/oauth2/auth/requests/${kind}/reject`,
        family: 'flows',
        operationId: `rejectOAuth2${Kind}Request`,
        tags: ['oAuth2'],
        summary: `Rejects a ${kind} request.`,
        query: challenge,
        body: { type: 'json', schema: rejectBody },
        responses: { 200: json('Where to send the browser.', redirectTo), ...err },
      }),
    ];
  }),
  adminRoute({
    method: 'get',
    path: '/admin/oauth2/auth/requests/logout',
    family: 'flows',
    operationId: 'getOAuth2LogoutRequest',
    tags: ['oAuth2'],
    summary: 'Reads a logout request.',
    query: [q('logout_challenge', 'The logout challenge.', true)],
    responses: { 200: json('The logout request.'), 410: json('Already handled.', redirectTo), ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/oauth2/auth/requests/logout/accept',
    family: 'flows',
    operationId: 'acceptOAuth2LogoutRequest',
    tags: ['oAuth2'],
    summary: 'Accepts a logout request.',
    query: [q('logout_challenge', 'The logout challenge.', true)],
    responses: { 200: json('Where to send the browser.', redirectTo), ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/oauth2/auth/requests/logout/reject',
    family: 'flows',
    operationId: 'rejectOAuth2LogoutRequest',
    tags: ['oAuth2'],
    summary: 'Rejects a logout request.',
    query: [q('logout_challenge', 'The logout challenge.', true)],
    responses: { 204: noContent, ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/oauth2/auth/requests/device/accept',
    family: 'flows',
    operationId: 'acceptUserCodeRequest',
    tags: ['oAuth2'],
    summary: 'Accepts the user code of a device challenge.',
    query: [q('device_challenge', 'The device challenge.', true)],
    body: { type: 'json', schema: acceptDeviceUserCodeBody },
    responses: {
      200: json('Where to send the browser.', redirectTo),
      429: json('Too many wrong user codes.', errorOAuth2),
      ...err,
    },
  }),
  // --- sessions (admin)
  adminRoute({
    method: 'get',
    path: '/admin/oauth2/auth/sessions/consent',
    family: 'sessions',
    operationId: 'listOAuth2ConsentSessions',
    tags: ['oAuth2'],
    summary: 'Lists a subject’s consent sessions (paginated).',
    query: [q('subject', 'The subject.', true), q('login_session_id', 'Only this login session.')],
    responses: { 200: json('Consent sessions.', z.array(obj)), ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/oauth2/auth/sessions/consent',
    family: 'sessions',
    operationId: 'revokeOAuth2ConsentSessions',
    tags: ['oAuth2'],
    summary: 'Revokes consent sessions and their tokens.',
    query: [q('subject', 'The subject.'), q('client', 'Only this client.'), q('all', 'Every client.')],
    responses: { 204: noContent, ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/oauth2/auth/sessions/login',
    family: 'sessions',
    operationId: 'revokeOAuth2LoginSessions',
    tags: ['oAuth2'],
    summary: 'Revokes login sessions (by subject or sid).',
    query: [q('subject', 'The subject.'), q('sid', 'One login session.')],
    responses: { 204: noContent, ...err },
  }),
  // --- tokens (admin)
  adminRoute({
    method: 'post',
    path: '/admin/oauth2/introspect',
    family: 'sessions',
    operationId: 'introspectOAuth2Token',
    tags: ['oAuth2'],
    summary: 'Token introspection (RFC 7662).',
    body: { type: 'form', schema: introspectForm },
    responses: { 200: json('Introspection result.', introspection), ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/oauth2/tokens',
    family: 'sessions',
    operationId: 'deleteOAuth2Token',
    tags: ['oAuth2'],
    summary: 'Deletes every access token of a client.',
    query: [q('client_id', 'The client.', true)],
    responses: { 204: noContent, ...err },
  }),
  // --- JSON Web Keys (admin)
  adminRoute({
    method: 'post',
    path: '/admin/keys/:set',
    family: 'keys',
    operationId: 'createJsonWebKeySet',
    tags: ['jwk'],
    summary: 'Generates a key in a set.',
    body: { type: 'json', schema: createJsonWebKeySetBody },
    responses: { 201: json('The set.', jwks), ...err },
  }),
  adminRoute({
    method: 'get',
    path: '/admin/keys/:set',
    family: 'keys',
    operationId: 'getJsonWebKeySet',
    tags: ['jwk'],
    summary: 'Reads a key set.',
    responses: { 200: json('The set.', jwks), ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/keys/:set',
    family: 'keys',
    operationId: 'setJsonWebKeySet',
    tags: ['jwk'],
    summary: 'Replaces a key set.',
    body: { type: 'json', schema: jsonWebKeySetBody },
    responses: { 200: json('The set.', jwks), ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/keys/:set',
    family: 'keys',
    operationId: 'deleteJsonWebKeySet',
    tags: ['jwk'],
    summary: 'Deletes a key set.',
    responses: { 204: noContent, ...err },
  }),
  adminRoute({
    method: 'get',
    path: '/admin/keys/:set/:kid',
    family: 'keys',
    operationId: 'getJsonWebKey',
    tags: ['jwk'],
    summary: 'Reads one key.',
    responses: { 200: json('A set holding the key.', jwks), ...err },
  }),
  adminRoute({
    method: 'put',
    path: '/admin/keys/:set/:kid',
    family: 'keys',
    operationId: 'setJsonWebKey',
    tags: ['jwk'],
    summary: 'Replaces one key.',
    body: { type: 'json', schema: jsonWebKeyBody },
    responses: { 200: json('The key.'), ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/keys/:set/:kid',
    family: 'keys',
    operationId: 'deleteJsonWebKey',
    tags: ['jwk'],
    summary: 'Deletes one key.',
    responses: { 204: noContent, ...err },
  }),
  // --- trusted JWT-bearer issuers (admin)
  adminRoute({
    method: 'post',
    path: '/admin/trust/grants/jwt-bearer/issuers',
    family: 'trust',
    operationId: 'trustOAuth2JwtGrantIssuer',
    tags: ['oAuth2'],
    summary: 'Trusts an issuer of JWT-bearer assertions (RFC 7523).',
    body: { type: 'json', schema: trustBody },
    responses: { 201: json('The trust relationship.'), ...err },
  }),
  adminRoute({
    method: 'get',
    path: '/admin/trust/grants/jwt-bearer/issuers',
    family: 'trust',
    operationId: 'listTrustedOAuth2JwtGrantIssuers',
    tags: ['oAuth2'],
    summary: 'Lists trusted issuers (paginated).',
    query: [q('issuer', 'Only this issuer.')],
    responses: { 200: json('Trust relationships.', z.array(obj)), ...err },
  }),
  adminRoute({
    method: 'get',
    path: '/admin/trust/grants/jwt-bearer/issuers/:id',
    family: 'trust',
    operationId: 'getTrustedOAuth2JwtGrantIssuer',
    tags: ['oAuth2'],
    summary: 'Reads a trust relationship.',
    responses: { 200: json('The trust relationship.'), ...err },
  }),
  adminRoute({
    method: 'delete',
    path: '/admin/trust/grants/jwt-bearer/issuers/:id',
    family: 'trust',
    operationId: 'deleteTrustedOAuth2JwtGrantIssuer',
    tags: ['oAuth2'],
    summary: 'Deletes a trust relationship.',
    responses: { 204: noContent, ...err },
  }),
];

/** Handlers by name (a guard and the handler, or the handler alone). */
export type HandlerMap = Record<string, Middleware | readonly Middleware[]>;

/** The policy of a route of the table (core/http/routes.ts). */
export function policyOf(r: OAuth2Route): RoutePolicy {
  const body = r.accepts ?? (r.body ? [r.body.type] : []);
  return {
    access: r.access ?? (r.listener === 'admin' ? 'admin' : 'public'),
    body,
    ...(r.family ? { family: r.family } : {}),
    ...(r.perClientCors ? { cors: 'per-client' as const } : {}),
    ...(r.limited ? { failedAuth: oauth2FailedAuthTarget } : {}),
  };
}

/**
 * Registers every route of the table on its listener's registrar, with its policy. Fails at
 * start-up when a route has no handler or a handler serves no route, so the table and the handlers
 * cannot drift apart.
 */
export function mountOAuth2Routes(
  tables: Record<Listener, Registrar>,
  handlers: HandlerMap,
  routes: readonly OAuth2Route[] = OAUTH2_ROUTES,
): void {
  const used = new Set<string>();
  for (const r of routes) {
    const name = r.handler ?? r.operationId;
    const h = handlers[name];
    if (!h) throw new Error(`oauth2 route ${r.method.toUpperCase()} ${r.path}: no handler '${name}'`);
    used.add(name);
    const chain = (Array.isArray(h) ? h : [h]) as Middleware[];
    tables[r.listener][r.method](r.path, policyOf(r), ...chain);
  }
  const unused = Object.keys(handlers).filter((k) => !used.has(k));
  if (unused.length) throw new Error(`oauth2 handlers without a route: ${unused.join(', ')}`);
}
