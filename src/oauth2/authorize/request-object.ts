/**
 * OpenID Connect request objects (Core §6): `request` (by value) is verified with the client's
 * `jwks` and merged over the query parameters; `scope` values of both are united. Only requests
 * with the `openid` scope use them (fosite). An unsigned object (`alg: none`) is accepted unless the
 * client pins `request_object_signing_alg`.
 * `request_uri` must be registered on the client; it, and a client's `jwks_uri`, are fetched through
 * the guarded outbound client (no internal addresses when `clients.http.disallow_private_ip_ranges`).
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { SafeFetchError, type SafeFetch } from '../../core/safe-fetch.ts';
import { ClientKeysError, clientKeys } from '../client-keys.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { FlowClient } from '../ports.ts';
import { splitSpaces } from '../scope.ts';

const ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

async function claimsOf(
  fetch: SafeFetch,
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
    if (!jwt.endsWith('.'))
      throw oauth2Error('invalid_request_object', { hint: 'Unable to verify the request object.' });
    return decodeJwt(jwt) as Record<string, unknown>;
  }
  if (!alg || !ALGS.includes(alg)) {
    throw oauth2Error('invalid_request_object', {
      hint: `This request object uses unsupported signing algorithm '${alg}'.`,
    });
  }
  let keys: Awaited<ReturnType<typeof clientKeys>>;
  try {
    keys = await clientKeys(fetch, client);
  } catch (e) {
    if (!(e instanceof ClientKeysError)) throw e;
    const family = alg.startsWith('ES') ? 'ECDSA' : 'RSA';
    throw oauth2Error('invalid_request_object', {
      hint: `Unable to retrieve ${family} signing key from OAuth 2.0 Client. ${e.message}`,
    });
  }
  try {
    const { payload } = await jwtVerify(jwt, createLocalJWKSet(keys), {
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
async function fetchRequestObject(fetch: SafeFetch, location: string): Promise<string> {
  const fail = (why: string) =>
    oauth2Error('invalid_request_uri', {
      hint: `Unable to fetch OpenID Connect request parameters from 'request_uri' because ${why}.`,
    });
  try {
    const r = await fetch(location);
    if (r.status !== 200) throw fail(`status code '200' was expected, but got '${r.status}'`);
    return r.text().trim();
  } catch (e) {
    if (e instanceof SafeFetchError) throw fail(e.message);
    throw e;
  }
}

export async function applyRequestObject(
  fetch: SafeFetch,
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
  const jwt = params.request_uri ? await fetchRequestObject(fetch, params.request_uri) : (params.request as string);
  if (Buffer.byteLength(jwt) > maxBytes)
    throw oauth2Error('invalid_request_object', { hint: `The request object is larger than ${maxBytes} bytes.` });
  const claims = await claimsOf(fetch, client, jwt, now);
  const out = { ...params };
  for (const [k, v] of Object.entries(claims)) {
    out[k] = typeof v === 'string' ? v : Array.isArray(v) ? v.join(' ') : JSON.stringify(v);
  }
  const merged = splitSpaces(out.scope);
  for (const s of scope) if (!merged.includes(s)) merged.push(s);
  out.scope = merged.join(' ');
  return out;
}
