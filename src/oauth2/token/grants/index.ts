/** Grant handlers by `grant_type`. Issue 5 adds refresh_token, client_credentials and jwt-bearer here. */
import type { FlowClient } from '../../ports.ts';
import type { TokenResponse } from '../issue.ts';
import { authorizationCodeGrant, type GrantDeps } from './authorization-code.ts';

export type GrantHandler = (d: GrantDeps, client: FlowClient, form: Record<string, string>) => Promise<TokenResponse>;

export const GRANTS: Record<string, GrantHandler> = {
  authorization_code: authorizationCodeGrant,
};

export type { GrantDeps };
