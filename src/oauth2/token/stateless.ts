/**
 * Stateless JWT access tokens (`strategies.jwt.stateless.enabled`): access tokens
 * are self-contained JWTs and no access-token row is written, so the endpoints that look tokens up
 * — introspection, revocation and userinfo — cannot answer and say so with 501 Not Implemented.
 */

import { AppError } from '../../core/errors.ts';
import type { OAuth2Config } from '../deps.ts';

export type StatefulEndpoint = 'introspection' | 'revocation' | 'userinfo';

/** `{"error":"not_implemented","error_description":"… why …"}`, status 501. */
export function statelessNotImplemented(endpoint: StatefulEndpoint): AppError {
  return new AppError({
    status: 501,
    code: 'not_implemented',
    description: `The ${endpoint} endpoint is not available because access tokens are stateless JWTs (strategies.jwt.stateless.enabled): no access token records are kept to look tokens up.`,
    hint: 'Verify access tokens as JWTs with the keys published at /.well-known/jwks.json.',
    family: 'oauth2',
  });
}

/** Throws the 501 when stateless JWT access tokens are on. */
export function assertStatefulTokens(config: OAuth2Config, endpoint: StatefulEndpoint): void {
  if (config.strategies.jwt.stateless.enabled) throw statelessNotImplemented(endpoint);
}
