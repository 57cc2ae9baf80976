/** The validated authorization request, and what is known about where errors may be sent. */
import type { FlowClient } from '../ports.ts';
import type { ClaimsRequest } from './checks/claims.ts';

export type ResponseMode = 'query' | 'fragment' | 'form_post';

export interface AuthorizeRequest {
  client: FlowClient;
  /** Every parameter (query and form, request object merged in). */
  params: Record<string, string>;
  /** The redirect URI the response goes to (validated). */
  redirectUri: string;
  responseTypes: string[];
  responseMode: ResponseMode;
  scope: string[];
  audience: string[];
  state: string;
  nonce: string;
  prompt: string[];
  /** -1 when not given. */
  maxAge: number;
  codeChallenge: string;
  codeChallengeMethod: string;
  /** The `claims` parameter (OpenID Connect Core §5.5), when given. */
  claims?: ClaimsRequest;
  /** `dpop_jkt` (RFC 9449 §10): the code may only be exchanged with a DPoP proof of this key. */
  dpopJkt?: string;
}

/**
 * Filled in while validating: once the redirect URI is known to be registered, errors go to the
 * client (303); before that they go to `urls.error` (302).
 */
export interface ErrorTarget {
  redirectUri?: string;
  responseMode: ResponseMode;
  state: string;
}
