/**
 * Hydra's client validator (client/validator.go), rule for rule and in its order, with its error
 * codes and hints. Pure: it fills Hydra's defaults into a copy of the draft and throws an AppError
 * for the first rule that fails. The network rules (address policy, sector_identifier_uri contents)
 * are in outbound.ts.
 */
import { createPublicKey } from 'node:crypto';
import { isIP } from 'node:net';
import { AppError, HERODOT } from '../../core/errors.ts';
import { isUnsafeWildcard } from '../../core/http/cors.ts';
import { canonicalDn } from '../dn.ts';
import { splitSpaces } from '../scope.ts';
import {
  type ClientDraft,
  type ClientFields,
  LIFESPAN_FIELDS,
  TLS_CLIENT_AUTH_FIELDS,
  type TlsClientAuthField,
  TOKEN_ENDPOINT_AUTH_METHODS,
} from './model.ts';
import { type GoUrl, parseRequestUri, parseUrl } from './uri.ts';
import { uriRefusal } from './uri-policy.ts';

const INVALID_METADATA =
  "The value of one of the Client Metadata fields is invalid and the server has rejected this request. Note that an Authorization Server MAY choose to substitute a valid value for any requested parameter of a Client's Metadata.";
const INVALID_REDIRECT = 'The value of one or more redirect_uris is invalid.';

export const invalidMetadata = (hint: string) =>
  new AppError({ status: 400, code: 'invalid_client_metadata', description: INVALID_METADATA, hint });
const invalidRedirect = (hint: string) =>
  new AppError({ status: 400, code: 'invalid_redirect_uri', description: INVALID_REDIRECT, hint });

const PRIVATE_KEY_JWT_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

/** The server settings the rules depend on. */
export interface ValidationEnv {
  /** `oidc.dynamic_client_registration.default_scope`. */
  defaultScope: readonly string[];
  /** `oidc.subject_identifiers.supported_types`. */
  subjectTypes: readonly string[];
  /** `strategies.access_token`. */
  accessTokenStrategy: 'opaque' | 'jwt';
  /** `dev`: admits `http` redirect and front-channel URIs for any host. */
  dev: boolean;
}

/** JWK sanity: node parses every asymmetric key type; a symmetric key needs its `k`. */
function validJwk(k: Record<string, unknown>): boolean {
  if (k.kty === 'oct') return typeof k.k === 'string' && k.k.length > 0;
  try {
    createPublicKey({ key: k as never, format: 'jwk' });
    return true;
  } catch {
    return false;
  }
}

const hasKeys = (d: ClientDraft) => Array.isArray(d.jwks.keys) && d.jwks.keys.length > 0;

function checkAuthMethod(d: ClientDraft): void {
  if (d.token_endpoint_auth_method === '') d.token_endpoint_auth_method = 'client_secret_basic';
  if (!(TOKEN_ENDPOINT_AUTH_METHODS as readonly string[]).includes(d.token_endpoint_auth_method)) {
    throw invalidMetadata(
      `Field token_endpoint_auth_method must be one of ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}, got '${d.token_endpoint_auth_method}'.`,
    );
  }
  if (d.token_endpoint_auth_method === 'private_key_jwt') {
    if (!d.jwks_uri && !hasKeys(d)) {
      throw invalidMetadata(
        "When token_endpoint_auth_method is 'private_key_jwt', either jwks or jwks_uri must be set.",
      );
    }
    if (d.token_endpoint_auth_signing_alg && !PRIVATE_KEY_JWT_ALGS.includes(d.token_endpoint_auth_signing_alg)) {
      throw invalidMetadata(
        'Only RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 and ES512 are supported as algorithms for private key authentication.',
      );
    }
  }
  if (d.token_endpoint_auth_method === 'self_signed_tls_client_auth' && !d.jwks_uri && !hasKeys(d)) {
    // RFC 8705 §2.2.2: the certificate's key is looked up in the client's keys.
    throw invalidMetadata(
      "When token_endpoint_auth_method is 'self_signed_tls_client_auth', either jwks or jwks_uri must be set (the key of the client's certificate).",
    );
  }
  checkTlsClientAuth(d);
  if (d.jwks_uri && hasKeys(d))
    throw invalidMetadata('Fields jwks and jwks_uri can not both be set, you must choose one.');
  for (const k of d.jwks.keys ?? []) {
    if (!validJwk(k)) throw invalidMetadata('Invalid JSON web key in set.');
  }
}

/** What each `tls_client_auth_*` field must look like to be matched against a certificate at all. */
const TLS_FIELD_CHECKS: Record<TlsClientAuthField, [(v: string) => boolean, string]> = {
  tls_client_auth_subject_dn: [(v) => canonicalDn(v) !== undefined, 'a distinguished name as an RFC 4514 string'],
  tls_client_auth_san_dns: [
    (v) => /^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*$/.test(v),
    'a DNS name',
  ],
  tls_client_auth_san_uri: [(v) => URL.canParse(v), 'an absolute URI'],
  tls_client_auth_san_ip: [(v) => isIP(v) !== 0, 'an IPv4 or IPv6 address'],
  tls_client_auth_san_email: [(v) => /^[^\s@]+@[^\s@]+$/.test(v), 'an e-mail address'],
};

/**
 * RFC 8705 §2.1.2: a `tls_client_auth` client registers exactly one of the subject DN or a SAN its
 * certificate carries; the fields mean nothing to other methods, so they are refused there rather
 * than silently ignored.
 */
function checkTlsClientAuth(d: ClientDraft): void {
  const set = TLS_CLIENT_AUTH_FIELDS.filter((f) => d[f] !== '');
  if (d.token_endpoint_auth_method !== 'tls_client_auth') {
    if (set.length)
      throw invalidMetadata(`Field ${set[0]} is used only with token_endpoint_auth_method 'tls_client_auth'.`);
    return;
  }
  if (set.length !== 1) {
    throw invalidMetadata(
      `When token_endpoint_auth_method is 'tls_client_auth', exactly one of ${TLS_CLIENT_AUTH_FIELDS.join(', ')} must be set${set.length ? `, got ${set.join(' and ')}` : ''}.`,
    );
  }
  const field = set[0] as TlsClientAuthField;
  const [valid, what] = TLS_FIELD_CHECKS[field];
  if (!valid(d[field])) throw invalidMetadata(`Field ${field} must be ${what}.`);
}

/** policy_uri, tos_uri, client_uri, logo_uri: a parseable URI with an http or https scheme and a host. */
function checkMetadataUris(d: ClientDraft): void {
  for (const field of ['policy_uri', 'tos_uri', 'client_uri', 'logo_uri'] as const) {
    const uri = d[field];
    if (uri === '') continue;
    const u = parseRequestUri(uri);
    if (!u) throw invalidMetadata(`Field ${field} must be a valid URI.`);
    if (u.scheme !== 'https' && u.scheme !== 'http') {
      throw invalidMetadata(`${uri} must use https:// or http:// as HTTP scheme for field ${field}.`);
    }
    // Stricter than Go's parser, which takes `http:foo` as an opaque URI: a web page needs a host.
    if (!u.hasAuthority || u.hostname === '' || !URL.canParse(uri)) {
      throw invalidMetadata(`Field ${field} must be a valid URI.`);
    }
  }
}

function checkCorsOrigins(d: ClientDraft): void {
  d.allowed_cors_origins = d.allowed_cors_origins.map((origin) => {
    const u = parseUrl(origin);
    if (!u) throw invalidMetadata(`Origin URL ${origin} from allowed_cors_origins could not be parsed.`);
    if (u.scheme !== 'https' && u.scheme !== 'http') {
      throw invalidMetadata(`Origin URL ${origin} must use https:// or http:// as HTTP scheme.`);
    }
    if (u.userinfo)
      throw invalidMetadata(`Origin URL ${origin} has HTTP user and/or password set which is not allowed.`);
    const path = u.path.replace(/\/+$/, '');
    if (path.length + u.query.length + u.fragment.length > 0) {
      throw invalidMetadata(
        `Origin URL ${origin} must have an empty path, query, and fragment but one of the parts is not empty.`,
      );
    }
    const normalised = `${u.scheme}://${u.host}`;
    // Stricter than Hydra, which stores it and matches it later: such a `*` matches hosts anyone can register.
    if (isUnsafeWildcard(normalised)) {
      throw invalidMetadata(
        `Origin URL ${origin} from allowed_cors_origins has a '*' that is not a whole host label, which would match hosts anyone can register; use the form https://*.example.com.`,
      );
    }
    return normalised;
  });
}

/** A plain host name (Go's `Hostname()`): DNS labels (letters, digits, `-`, `_`) or an IPv6 literal. */
const PLAIN_HOST = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*|[0-9a-f]*:[0-9a-f:.]*)$/i;

/**
 * gatehouse's rule for self-registered clients (Hydra 26 accepts wildcards there too): each
 * `allowed_cors_origins` entry is one plain origin, `scheme://host[:port]` (RFC 6454 §6.2), with no
 * `*`, `?` or `{` — an anonymous registrant may not claim a family of origins. An entry `current`
 * (the client being replaced, RFC 7592) already has, set by the operator, may be sent back unchanged.
 */
function checkDynamicCorsOrigins(d: ClientFields, current?: ClientFields): void {
  for (const origin of d.allowed_cors_origins) {
    if (current?.allowed_cors_origins.includes(origin)) continue;
    if (/[*?{}]/.test(origin)) {
      throw invalidMetadata(
        `Origin URL ${origin} from allowed_cors_origins contains a wildcard (*, ? or {), which is not allowed for dynamic client registration: list each origin.`,
      );
    }
    const u = parseUrl(origin);
    if (u?.hasAuthority && (u.scheme === 'https' || u.scheme === 'http') && !PLAIN_HOST.test(u.hostname)) {
      throw invalidMetadata(
        `Origin URL ${origin} from allowed_cors_origins must be a plain origin, scheme://host[:port], for dynamic client registration.`,
      );
    }
  }
}

function checkRedirects(d: ClientDraft, dev: boolean): GoUrl[] {
  return (d.redirect_uris ?? []).map((r) => {
    if (r.includes('#')) throw invalidRedirect('Redirect URIs must not contain fragments (#).');
    const u = parseRequestUri(r);
    if (!u) throw invalidRedirect(`Unable to parse redirect URL: ${r}`);
    const refused = uriRefusal(r, 'redirect', dev);
    if (refused) throw invalidRedirect(`Redirect URL ${r} is not allowed: ${refused}.`);
    return u;
  });
}

/** The other URI fields a browser or the server uses: a scheme from the allow-list (uri-policy.ts). */
function checkUsedUris(d: ClientDraft, dev: boolean): void {
  const fields: Array<[string, string, 'web' | 'fetch']> = [
    ['frontchannel_logout_uri', d.frontchannel_logout_uri, 'web'],
    ['backchannel_logout_uri', d.backchannel_logout_uri, 'fetch'],
    ['jwks_uri', d.jwks_uri, 'fetch'],
    ...(d.request_uris ?? []).map((u): [string, string, 'fetch'] => ['request_uris', u, 'fetch']),
  ];
  for (const [field, uri, use] of fields) {
    if (!uri) continue;
    const refused = uriRefusal(uri, use, dev);
    if (refused) throw invalidMetadata(`Field ${field} is not allowed: ${refused}.`);
  }
}

/** Subject types the server offers this client: pairwise is off under the JWT access token strategy. */
export function supportedSubjectTypes(env: ValidationEnv, clientStrategy: string): string[] {
  let pub = env.subjectTypes.includes('public');
  let pairwise = env.subjectTypes.includes('pairwise');
  pub ||= !pairwise;
  if (pairwise && (clientStrategy || env.accessTokenStrategy) === 'jwt') pairwise = false;
  return [...(pub ? ['public'] : []), ...(pairwise ? ['pairwise'] : [])];
}

function checkSubjectType(d: ClientDraft, env: ValidationEnv): void {
  const supported = supportedSubjectTypes(env, d.access_token_strategy);
  if (d.subject_type === '') {
    d.subject_type = supported.includes('public') ? 'public' : (supported[0] as string);
  } else if (!supported.includes(d.subject_type)) {
    throw invalidMetadata(
      `Subject type ${d.subject_type} is not supported by server, only [${supported.join(' ')}] are allowed.`,
    );
  }
}

function checkPostLogout(d: ClientDraft, redirects: GoUrl[], dev: boolean): void {
  for (const l of d.post_logout_redirect_uris) {
    const u = parseRequestUri(l);
    if (!u) throw invalidMetadata(`Unable to parse post_logout_redirect_uri: ${l}`);
    const refused = uriRefusal(l, 'redirect', dev);
    if (refused) throw invalidMetadata(`post_logout_redirect_uri '${l}' is not allowed: ${refused}.`);
    const match = redirects.some((r) => r.scheme === u.scheme && r.hostname === u.hostname && r.port === u.port);
    if (!match) {
      throw invalidMetadata(
        `post_logout_redirect_uri '${l}' must match the domain, port, scheme of at least one of the registered redirect URIs but did not`,
      );
    }
  }
}

/**
 * Validates a client write and fills Hydra's defaults (auth method, scope, subject type, userinfo
 * alg). Returns the normalised copy; throws `invalid_client_metadata` / `invalid_redirect_uri`.
 */
export function validateClient(draft: ClientDraft, env: ValidationEnv): ClientDraft {
  const d: ClientDraft = structuredClone(draft);
  checkAuthMethod(d);
  checkMetadataUris(d);
  if (d.client_secret.length > 0 && Buffer.byteLength(d.client_secret) < 6) {
    throw invalidMetadata('Field client_secret must contain a secret that is at least 6 characters long.');
  }
  if (d.scope === '') d.scope = env.defaultScope.join(' ');
  checkCorsOrigins(d);
  if (d.sector_identifier_uri) {
    const u = parseUrl(d.sector_identifier_uri);
    if (!u) throw invalidMetadata('Value of sector_identifier_uri could not be parsed.');
    if (u.scheme !== 'https') throw invalidMetadata('Value sector_identifier_uri must be an HTTPS URL but it is not.');
  }
  if (d.userinfo_signed_response_alg === '') d.userinfo_signed_response_alg = 'none';
  if (d.userinfo_signed_response_alg !== 'none' && d.userinfo_signed_response_alg !== 'RS256') {
    throw invalidMetadata("Field userinfo_signed_response_alg can either be 'none' or 'RS256'.");
  }
  const redirects = checkRedirects(d, env.dev);
  checkUsedUris(d, env.dev);
  if (d.access_token_strategy) {
    const s = d.access_token_strategy.toLowerCase();
    if (s !== 'opaque' && s !== 'jwt') {
      throw invalidMetadata(
        `invalid access token strategy: '${d.access_token_strategy}' is neither 'opaque' nor 'jwt'`,
      );
    }
    d.access_token_strategy = s;
  }
  checkSubjectType(d, env);
  checkPostLogout(d, redirects, env.dev);
  return d;
}

/**
 * What an anonymous registrant may ask for (`oidc.dynamic_client_registration.allowed_scope`,
 * `allowed_audience`). RFC 7591 §2 lets the server refuse or replace requested metadata; §5 (and
 * RFC 7592 §2.2 for updates) names `invalid_client_metadata` as the answer.
 */
export interface DynamicBounds {
  allowedScope: readonly string[];
  allowedAudience: readonly string[];
}

/**
 * gatehouse's bounds on a self-registered client (Hydra 26 has none: it stores whatever lifespans,
 * scope and audience the body names): no per-client token lifespans (the server's `ttl.*` apply),
 * scope and audience only from the configured sets. `current` is the client being replaced (RFC
 * 7592): what it already has (from the operator, say) may be sent back unchanged, nothing more.
 */
function checkDynamicBounds(d: ClientFields, bounds: DynamicBounds, current?: ClientFields): void {
  for (const f of LIFESPAN_FIELDS) {
    const v = d[f];
    if (v !== null && v !== current?.[f]) {
      throw invalidMetadata(
        `'${f}' cannot be set for dynamic client registration: the server's token lifespans apply.`,
      );
    }
  }
  const has = splitSpaces(current?.scope);
  for (const s of splitSpaces(d.scope)) {
    if (!bounds.allowedScope.includes(s) && !has.includes(s)) {
      throw invalidMetadata(`Scope '${s}' is not allowed for dynamically registered clients.`);
    }
  }
  for (const a of d.audience) {
    if (!bounds.allowedAudience.includes(a) && !current?.audience.includes(a)) {
      throw invalidMetadata(`Audience '${a}' is not allowed for dynamically registered clients.`);
    }
  }
}

/**
 * The extra refusals of OpenID Connect dynamic registration (Hydra's, then gatehouse's bounds),
 * before the common rules.
 */
export function validateDynamicClient(
  draft: ClientDraft,
  env: ValidationEnv,
  bounds: DynamicBounds,
  current?: ClientFields,
): ClientDraft {
  if (draft.metadata !== undefined && draft.metadata !== null) {
    throw invalidMetadata("'metadata' cannot be set for dynamic client registration");
  }
  if (draft.access_token_strategy) {
    throw new AppError({
      status: 400,
      code: HERODOT.badRequest,
      description: 'It is not allowed to choose your own access token strategy.',
    });
  }
  for (const field of ['skip_consent', 'skip_logout_consent'] as const) {
    if (draft[field]) {
      throw new AppError({
        status: 400,
        code: 'invalid_request',
        description: `'${field}' cannot be set for dynamic client registration`,
      });
    }
  }
  checkDynamicBounds(draft, bounds, current);
  checkDynamicCorsOrigins(draft, current);
  return validateClient(draft, env);
}
