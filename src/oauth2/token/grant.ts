/**
 * What a token endpoint answer is issued for: the grant a grant handler (or the consent step)
 * checked, and the grant types by URN. The issuer (issue.ts), the token hook (hook.ts) and the JWT
 * claims (jwt-claims.ts) all read it; it imports none of them.
 */
import type { FlowClient } from '../ports.ts';
import type { Confirmation, GrantSession } from './session.ts';

/** RFC 7523 §2.1. */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export type GrantKind =
  | 'authorization_code'
  | 'implicit'
  | 'refresh_token'
  | 'client_credentials'
  | 'jwt_bearer'
  | 'device_authorization'
  | 'token_exchange';

export interface Grant {
  /** The grant family id (the consent request id for browser flows). */
  requestId: string;
  client: FlowClient;
  requestedScope: string[];
  grantedScope: string[];
  requestedAudience: string[];
  grantedAudience: string[];
  requestedAt: Date;
  session: GrantSession;
  /**
   * The access token's audience when a token request narrowed it with `resource` (RFC 8707 §2.2);
   * the refresh token keeps `grantedAudience`.
   */
  accessTokenAudience?: string[];
  /**
   * What the access token is bound to (token/binding.ts): the DPoP key the request proved (RFC
   * 9449) and/or its client certificate (RFC 8705 §3).
   */
  cnf?: Confirmation;
}
