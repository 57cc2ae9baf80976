/** Grant handlers by `grant_type` (node-oidc-provider's grant map). */
import type { FlowClient } from '../../ports.ts';
import type { Possession } from '../binding.ts';
import { JWT_BEARER_GRANT } from '../grant.ts';
import { authorizationCodeGrant } from './authorization-code.ts';
import { clientCredentialsGrant } from './client-credentials.ts';
import type { GrantDeps, GrantPlan } from './deps.ts';
import { deviceCodeGrant } from './device-code.ts';
import { jwtBearerGrant } from './jwt-bearer.ts';
import { refreshTokenGrant } from './refresh-token.ts';
import { TOKEN_EXCHANGE_GRANT, tokenExchangeGrant } from './token-exchange.ts';

/** Checks the request; the plan it returns is stored by the token service (store/token-plan.ts). */
export type GrantHandler = (
  d: GrantDeps,
  client: FlowClient,
  form: Record<string, string>,
  /** What the request proved possession of (DPoP key, client certificate): the access token is bound to it. */
  held: Possession,
) => Promise<GrantPlan>;

export const GRANTS: Record<string, GrantHandler> = {
  authorization_code: authorizationCodeGrant,
  refresh_token: refreshTokenGrant,
  client_credentials: clientCredentialsGrant,
  [JWT_BEARER_GRANT]: jwtBearerGrant,
  'urn:ietf:params:oauth:grant-type:device_code': deviceCodeGrant,
  [TOKEN_EXCHANGE_GRANT]: tokenExchangeGrant,
};

export type { GrantDeps };
