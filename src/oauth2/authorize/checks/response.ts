/** `response_type` (a registered combination of code/token/id_token) and `response_mode`. */
import { oauth2Error } from '../../oauth-errors.ts';
import { clientGrantTypes, clientResponseTypes, type FlowClient } from '../../ports.ts';
import { splitSpaces } from '../../scope.ts';
import type { ResponseMode } from '../request.ts';

const KNOWN = new Set(['code', 'token', 'id_token']);

export function parseResponseMode(raw: string | undefined): ResponseMode | undefined {
  if (!raw) return undefined;
  if (raw === 'query' || raw === 'fragment' || raw === 'form_post') return raw;
  throw oauth2Error('unsupported_response_mode', { hint: `Request with unsupported response_mode '${raw}'.` });
}

export function checkResponseTypes(client: FlowClient, raw: string | undefined): string[] {
  const types = splitSpaces(raw);
  if (!types.length) {
    throw oauth2Error('unsupported_response_type', { hint: "The request is missing the 'response_type' parameter." });
  }
  const set = [...new Set(types)].sort().join(' ');
  const allowed = clientResponseTypes(client).some((t) => [...new Set(splitSpaces(t))].sort().join(' ') === set);
  if (!allowed || types.some((t) => !KNOWN.has(t))) {
    throw oauth2Error('unsupported_response_type', {
      hint: `The client is not allowed to request response_type '${raw}'.`,
    });
  }
  return types;
}

/** Default: `query` for `code` alone, else `fragment`. Tokens never travel in a query string. */
export function effectiveResponseMode(types: readonly string[], given: ResponseMode | undefined): ResponseMode {
  const codeOnly = types.length === 1 && types[0] === 'code';
  if (!given) return codeOnly ? 'query' : 'fragment';
  if (given === 'query' && !codeOnly) {
    throw oauth2Error('unsupported_response_mode', {
      hint: `Insecure response_mode 'query' for the response_type '${types.join(' ')}'.`,
    });
  }
  return given;
}

/** Hybrid and implicit responses need the matching grant types (fosite's OpenID handlers). */
export function checkResponseGrants(client: FlowClient, types: readonly string[]): void {
  const grants = clientGrantTypes(client);
  const implicit = types.includes('token') || (types.includes('id_token') && !types.includes('code'));
  if (types.length > 1 && types.includes('code') && !grants.includes('authorization_code')) {
    throw oauth2Error('invalid_grant', {
      hint: "The OAuth 2.0 Client is not allowed to use authorization grant 'authorization_code'.",
    });
  }
  if (implicit && !grants.includes('implicit')) {
    throw oauth2Error('invalid_grant', {
      hint: "The OAuth 2.0 Client is not allowed to use the authorization grant 'implicit'.",
    });
  }
}
