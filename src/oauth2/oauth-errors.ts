/**
 * RFC 6749 / OpenID Connect errors with fosite's descriptions (Hydra's wire text). Every call builds
 * a new AppError: a hint, debug text or header given for one request is never seen by another.
 */
import { AppError } from '../core/errors.ts';
import type { ErrorFamilies } from '../core/http/errors.ts';

const CATALOGUE = {
  invalid_request: [
    400,
    'The request is missing a required parameter, includes an invalid parameter value, includes a parameter more than once, or is otherwise malformed.',
  ],
  unauthorized_client: [400, 'The client is not authorized to request a token using this method.'],
  access_denied: [403, 'The resource owner or authorization server denied the request.'],
  unsupported_response_type: [400, 'The authorization server does not support obtaining a token using this method.'],
  unsupported_response_mode: [
    400,
    'The authorization server does not support obtaining a response using this response mode.',
  ],
  invalid_scope: [400, 'The requested scope is invalid, unknown, or malformed.'],
  server_error: [
    500,
    'The authorization server encountered an unexpected condition that prevented it from fulfilling the request.',
  ],
  invalid_grant: [
    400,
    'The provided authorization grant (e.g., authorization code, resource owner credentials) or refresh token is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  ],
  invalid_client: [
    401,
    'Client authentication failed (e.g., unknown client, no client authentication included, or unsupported authentication method).',
  ],
  invalid_state: [400, 'The state is missing or does not have enough characters and is therefore considered too weak.'],
  insufficient_entropy: [
    400,
    'The request used a security parameter (e.g., anti-replay, anti-csrf) with insufficient entropy.',
  ],
  request_unauthorized: [401, 'The request could not be authorized.'],
  request_forbidden: [403, 'The request is not allowed.'],
  invalid_token: [401, 'Token is inactive because it is malformed, expired or otherwise invalid.'],
  token_inactive: [401, 'Token is inactive because it is malformed, expired or otherwise invalid.'],
  login_required: [400, 'The Authorization Server requires End-User authentication.'],
  consent_required: [400, 'The Authorization Server requires End-User consent.'],
  interaction_required: [400, 'The Authorization Server requires End-User interaction of some form to proceed.'],
  request_not_supported: [400, 'The OP does not support use of the request parameter.'],
  request_uri_not_supported: [400, 'The OP does not support use of the request_uri parameter.'],
  registration_not_supported: [400, 'The OP does not support use of the registration parameter.'],
  // RFC 9449 §5, §8 (DPoP).
  invalid_dpop_proof: [400, 'The DPoP proof is invalid.'],
  use_dpop_nonce: [400, 'Authorization server requires nonce in DPoP proof.'],
  // RFC 8707 §2 (resource indicators).
  invalid_target: [400, 'The requested resource is invalid, missing, unknown, or malformed.'],
  invalid_request_uri: [400, 'The request_uri in the Authorization Request returns an error or contains invalid data.'],
  invalid_request_object: [400, 'The request parameter contains an invalid Request Object.'],
  jti_known: [400, 'The jti was already used.'],
  scope_not_granted: [403, 'The token was not granted the requested scope.'],
  missing_required_parameter: [400, 'One of the required parameters is missing. Check your request parameters.'],
  // RFC 8628 §3.5 (device authorization grant)
  authorization_pending: [
    400,
    "The authorization request is still pending as the end user hasn't yet completed the user-interaction steps.",
  ],
  slow_down: [400, 'The authorization request was rate-limited to prevent system overload.'],
  expired_token: [400, 'The device_code has expired, and the device authorization session has concluded.'],
} as const;

export type OAuth2ErrorCode = keyof typeof CATALOGUE;

export interface OAuth2ErrorExtra {
  hint?: string;
  debug?: string;
  headers?: Record<string, string>;
  /** Override the catalogue status (e.g. `invalid_token` 400 for a malformed token). */
  status?: number;
  cause?: unknown;
}

/** The error family of RFC 6749 errors (rendered in the default `{error, error_description}` shape). */
export const OAUTH2_FAMILY = 'oauth2';

/**
 * The family's registration with the apps: the public `/oauth2/…` and `/userinfo` endpoints answer
 * a value PostgreSQL refuses (a NUL byte, a number out of range) with `invalid_request`.
 */
export const OAUTH2_ERROR_FAMILIES: ErrorFamilies = {
  public: [
    { prefix: '/oauth2', family: OAUTH2_FAMILY },
    { prefix: '/userinfo', family: OAUTH2_FAMILY },
  ],
  admin: [],
  renderers: {
    [OAUTH2_FAMILY]: {
      invalidValue: () =>
        oauth2Error('invalid_request', { hint: 'A parameter contains a value that cannot be stored.' }),
    },
  },
};

/** A fresh RFC 6749 error rendered as `{error, error_description}` (hint appended). */
export function oauth2Error(code: OAuth2ErrorCode, extra: OAuth2ErrorExtra = {}): AppError {
  const [status, description] = CATALOGUE[code];
  return new AppError({
    status: extra.status ?? status,
    code,
    description,
    family: OAUTH2_FAMILY,
    ...(extra.hint !== undefined ? { hint: extra.hint } : {}),
    ...(extra.debug !== undefined ? { debug: extra.debug } : {}),
    ...(extra.headers ? { headers: extra.headers } : {}),
    ...(extra.cause !== undefined ? { cause: extra.cause } : {}),
  });
}

/** A denied login/consent (RejectOAuth2Request) turned into the error the client receives. */
export function deniedError(e: {
  error: string;
  error_description: string;
  error_hint: string;
  error_debug: string;
  status_code: number;
}): AppError {
  return new AppError({
    status: e.status_code || 400,
    code: e.error || 'request_denied',
    description: e.error_description,
    family: OAUTH2_FAMILY,
    ...(e.error_hint ? { hint: e.error_hint } : {}),
    ...(e.error_debug ? { debug: e.error_debug } : {}),
  });
}
