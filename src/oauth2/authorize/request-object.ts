/**
 * OpenID Connect request objects (Core §6): `request` (by value) is verified with the client's
 * `jwks` and merged over the query parameters; `scope` values of both are united. Only requests
 * with the `openid` scope use them (fosite). An unsigned object (`alg: none`) is accepted unless the
 * client pins `request_object_signing_alg`.
 *
 * TODO(#10): `request_uri` needs the guarded outbound client (src/core/safe-fetch.ts) to fetch the
 * object; until it lands a registered `request_uri` is answered with `request_uri_not_supported`.
 * The same applies to clients that publish their keys only through `jwks_uri`.
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { oauth2Error } from '../oauth-errors.ts';
import type { FlowClient } from '../ports.ts';
import { splitSpaces } from '../scope.ts';

const ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

async function claimsOf(client: FlowClient, jwt: string, now: Date): Promise<Record<string, unknown>> {
  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch {
    throw oauth2Error('invalid_request_object', { hint: "Unable to verify the request object's signature." });
  }
  if (client.requestObjectSigningAlg && client.requestObjectSigningAlg !== alg) {
    throw oauth2Error('invalid_request_object', {
      hint: `The request object uses signing algorithm '${alg}', but the requested OAuth 2.0 Client enforces signing algorithm '${client.requestObjectSigningAlg}'.`,
    });
  }
  if (alg === 'none') {
    if (!jwt.endsWith('.'))
      throw oauth2Error('invalid_request_object', { hint: 'Unable to verify the request object.' });
    return decodeJwt(jwt) as Record<string, unknown>;
  }
  if (!alg || !ALGS.includes(alg)) {
    throw oauth2Error('invalid_request_object', {
      hint: `This request object uses unsupported signing algorithm '${alg}'.`,
    });
  }
  if (!client.jwks?.keys?.length) {
    throw oauth2Error('request_uri_not_supported', {
      hint: 'Fetching keys from jwks_uri is not available yet; register the keys with the client (jwks).',
    });
  }
  try {
    const { payload } = await jwtVerify(jwt, createLocalJWKSet(client.jwks), {
      algorithms: ALGS,
      currentDate: now,
    });
    return payload as Record<string, unknown>;
  } catch (e) {
    throw oauth2Error('invalid_request_object', {
      hint: "Unable to verify the request object's signature.",
      debug: (e as Error).message,
    });
  }
}

/** Returns the parameters with the request object merged in (unchanged when there is none). */
export async function applyRequestObject(
  client: FlowClient,
  params: Record<string, string>,
  now: Date,
): Promise<Record<string, string>> {
  const scope = splitSpaces(params.scope);
  if (!scope.includes('openid') || (!params.request && !params.request_uri)) return params;
  if (params.request && params.request_uri) {
    throw oauth2Error('invalid_request', {
      hint: "OpenID Connect parameters 'request' and 'request_uri' were both given, but you can use at most one.",
    });
  }
  if (!client.jwks?.keys?.length && !client.jwksUri) {
    throw oauth2Error('invalid_request', {
      hint: "OpenID Connect 'request' or 'request_uri' context was given, but the OAuth 2.0 Client does not have any JSON Web Keys registered.",
    });
  }
  if (params.request_uri) {
    if (!client.requestUris.includes(params.request_uri)) {
      throw oauth2Error('invalid_request_uri', {
        hint: `Request URI '${params.request_uri}' is not whitelisted by the OAuth 2.0 Client.`,
      });
    }
    throw oauth2Error('request_uri_not_supported', { hint: "Fetching 'request_uri' is not available yet." });
  }
  const claims = await claimsOf(client, params.request as string, now);
  const out = { ...params };
  for (const [k, v] of Object.entries(claims)) {
    out[k] = typeof v === 'string' ? v : Array.isArray(v) ? v.join(' ') : JSON.stringify(v);
  }
  const merged = splitSpaces(out.scope);
  for (const s of scope) if (!merged.includes(s)) merged.push(s);
  out.scope = merged.join(' ');
  return out;
}
