/**
 * OpenID Connect request objects (Core §6): `request` (by value) is verified with the client's
 * `jwks` and merged over the query parameters; `scope` values of both are united. Only requests
 * with the `openid` scope use them (fosite). An unsigned object (`alg: none`) is accepted only from
 * a client that registered `request_object_signing_alg: none`; a `client_id` or `response_type`
 * inside must equal the query's (Core §6.1).
 * `request_uri` must be registered on the client; it, and a client's `jwks_uri`, are fetched through
 * the guarded outbound client (no internal addresses when `clients.http.disallow_private_ip_ranges`,
 * or for dynamically registered clients); key sets are cached (client-keys.ts). A failed fetch is
 * reported with a fixed message: no status, address or timing.
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JWK, errors as joseErrors, jwtVerify } from 'jose';
import { SafeFetchError } from '../../core/safe-fetch.ts';
import { ClientKeysError, type ClientOutbound } from '../client-keys.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { FlowClient } from '../ports.ts';
import { splitSpaces } from '../scope.ts';

const ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

async function claimsOf(
  outbound: ClientOutbound,
  client: FlowClient,
  jwt: string,
  now: Date,
): Promise<Record<string, unknown>> {
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
    if (client.requestObjectSigningAlg !== 'none') {
      throw oauth2Error('invalid_request_object', {
        hint: "The request object is not signed ('alg' is 'none'), but the OAuth 2.0 Client did not register request_object_signing_alg 'none'.",
      });
    }
    if (!jwt.endsWith('.'))
      throw oauth2Error('invalid_request_object', { hint: 'Unable to verify the request object.' });
    return decodeJwt(jwt) as Record<string, unknown>;
  }
  if (!alg || !ALGS.includes(alg)) {
    throw oauth2Error('invalid_request_object', {
      hint: `This request object uses unsupported signing algorithm '${alg}'.`,
    });
  }
  const family = alg.startsWith('ES') ? 'ECDSA' : 'RSA';
  const keysOf = async (refresh: boolean) => {
    try {
      return await outbound.keys(client, { refresh });
    } catch (e) {
      if (!(e instanceof ClientKeysError)) throw e;
      throw oauth2Error('invalid_request_object', {
        hint: `Unable to retrieve ${family} signing key from OAuth 2.0 Client. ${e.message}`,
      });
    }
  };
  const verify = async (keys: { keys: JWK[] }) =>
    (await jwtVerify(jwt, createLocalJWKSet(keys), { algorithms: ALGS, currentDate: now })).payload as Record<
      string,
      unknown
    >;
  const invalid = (e: unknown) =>
    oauth2Error('invalid_request_object', {
      hint: "Unable to verify the request object's signature.",
      debug: (e as Error).message,
    });
  const keys = await keysOf(false);
  try {
    return await verify(keys);
  } catch (e) {
    if (!(e instanceof joseErrors.JWKSNoMatchingKey) || !keys.fetched) throw invalid(e);
  }
  // A key the cached set does not hold: the client may have rotated; refetch (rate-limited) once.
  const again = await keysOf(true);
  try {
    return await verify(again);
  } catch (e) {
    throw invalid(e);
  }
}

/** The claims of a request object of `client`, verified (size, algorithm, signature, lifetime). */
export async function requestObjectClaims(
  outbound: ClientOutbound,
  client: FlowClient,
  jwt: string,
  now: Date,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  if (Buffer.byteLength(jwt) > maxBytes)
    throw oauth2Error('invalid_request_object', { hint: `The request object is larger than ${maxBytes} bytes.` });
  return claimsOf(outbound, client, jwt, now);
}

/** The request object at a registered `request_uri`. */
async function fetchRequestObject(outbound: ClientOutbound, client: FlowClient, location: string): Promise<string> {
  // One message whatever went wrong: the answer must not tell what (if anything) listens there.
  const fail = () =>
    oauth2Error('invalid_request_uri', {
      hint: "Unable to fetch OpenID Connect request parameters from 'request_uri'.",
    });
  try {
    const r = await outbound.fetchFor(client)(location);
    if (r.status !== 200) throw fail();
    return r.text().trim();
  } catch (e) {
    if (e instanceof SafeFetchError) throw fail();
    throw e;
  }
}

/** OpenID Connect Core §6.1: `client_id` and `response_type` inside the object must be the query's. */
function checkBinding(claims: Record<string, unknown>, params: Record<string, string>): void {
  for (const name of ['client_id', 'response_type'] as const) {
    if (claims[name] === undefined) continue;
    if (claims[name] !== (params[name] ?? '')) {
      throw oauth2Error('invalid_request_object', {
        hint: `The '${name}' of the request object must equal the '${name}' request parameter.`,
      });
    }
  }
}

/** Returns the parameters with the request object merged in (unchanged when there is none). */
export async function applyRequestObject(
  outbound: ClientOutbound,
  client: FlowClient,
  params: Record<string, string>,
  now: Date,
  maxBytes = 65536,
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
  }
  const jwt = params.request_uri
    ? await fetchRequestObject(outbound, client, params.request_uri)
    : (params.request as string);
  const claims = await requestObjectClaims(outbound, client, jwt, now, maxBytes);
  checkBinding(claims, params);
  const out = { ...params };
  for (const [k, v] of Object.entries(claims)) {
    out[k] = typeof v === 'string' ? v : Array.isArray(v) ? v.join(' ') : JSON.stringify(v);
  }
  const merged = splitSpaces(out.scope);
  for (const s of scope) if (!merged.includes(s)) merged.push(s);
  out.scope = merged.join(' ');
  return out;
}
