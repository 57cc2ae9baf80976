/**
 * Client authentication at the token endpoint (and later revocation and device endpoints):
 * `client_secret_basic` (id and secret each form-decoded), `client_secret_post`, `private_key_jwt`
 * (RFC 7523 client assertion; each `jti` usable once), `none` for public clients, and mutual TLS
 * (RFC 8705 §2): `tls_client_auth` (a PKI-verified certificate with the registered subject DN or
 * SAN) and `self_signed_tls_client_auth` (a certificate whose key is one of the client's keys);
 * with those, `client_id` in the form names the client. Using a method other than the registered
 * one is `invalid_client` with a hint naming both.
 */
import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import type { Clock } from '../../core/clock.ts';
import { AppError } from '../../core/errors.ts';
import { ClientKeysError, type ClientOutbound } from '../client-keys.ts';
import { type CertificateSource, certificateKeyIn, certificateNames } from '../mtls.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { ClientPort, FlowClient } from '../ports.ts';
import { insertJtiGrouped } from '../store/token-batch.ts';
import type { Db } from '../tables.ts';

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const ASSERTION_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

export interface ClientAuthDeps {
  db: Db;
  clock: Clock;
  clients: ClientPort;
  /** The client's keys (jwks / cached jwks_uri). */
  outbound: ClientOutbound;
  /** `oauth2.client_assertion.max_ttl` (ms): the furthest an assertion's `exp` may be in the future. */
  assertionMaxTtlMs: number;
  /** Accepted `aud` values of client assertions (the token endpoint URLs). */
  tokenUrls: readonly string[];
}

export interface ClientCredentialsInput {
  form: Record<string, string>;
  authorization: string | undefined;
  /** The request's client certificate (RFC 8705), read only for a client that authenticates with one. */
  certificate?: CertificateSource;
}

/** Form decoding of a Basic credential part (`+` is a space), as Go's url.QueryUnescape. */
function formDecode(s: string, what: 'id' | 'secret'): string {
  try {
    return decodeURIComponent(s.replaceAll('+', ' '));
  } catch {
    throw oauth2Error('invalid_request', {
      hint: `The client ${what} in the HTTP authorization header could not be decoded from 'application/x-www-form-urlencoded'.`,
    });
  }
}

export function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const m = /^Basic\s+(.+)$/i.exec(header ?? '');
  if (!m) return undefined;
  const raw = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const i = raw.indexOf(':');
  if (i < 0) return undefined;
  return { id: formDecode(raw.slice(0, i), 'id'), secret: formDecode(raw.slice(i + 1), 'secret') };
}

const wrongMethod = (registered: string, used: string) =>
  oauth2Error('invalid_client', {
    hint: `The OAuth 2.0 Client supports client authentication method '${registered}', but method '${used}' was requested. You must configure the OAuth 2.0 client's 'token_endpoint_auth_method' value to accept '${used}'.`,
  });

/** The client's registered keys; an unavailable `jwks_uri` is `invalid_client`. */
async function clientKeys(d: ClientAuthDeps, client: FlowClient, refresh: boolean) {
  try {
    return await d.outbound.keys(client, { refresh });
  } catch (e) {
    if (e instanceof ClientKeysError) throw oauth2Error('invalid_client', { hint: e.message });
    throw e;
  }
}

const TLS_METHODS = new Set(['tls_client_auth', 'self_signed_tls_client_auth']);

/**
 * RFC 8705 §2: the client proves itself with the TLS client certificate of the request (the
 * handshake proved possession of its key). Failures are `invalid_client`, as for other methods.
 */
async function certificateAuth(d: ClientAuthDeps, client: FlowClient, source: CertificateSource | undefined) {
  const cert = source?.();
  const method = client.tokenEndpointAuthMethod;
  if (!cert) {
    throw oauth2Error('invalid_client', {
      hint: `The OAuth 2.0 Client authenticates with '${method}', but the request came without a TLS client certificate.`,
    });
  }
  if (method === 'tls_client_auth') {
    // §2.1: the chain decides who the certificate is; the registered name decides whose it is.
    if (!cert.pkiVerified) {
      throw oauth2Error('invalid_client', {
        hint: 'The TLS client certificate is not issued by a certificate authority this server trusts for tls_client_auth.',
      });
    }
    if (!client.tlsClientAuth || !certificateNames(cert, client.tlsClientAuth)) {
      const field = client.tlsClientAuth ? `tls_client_auth_${client.tlsClientAuth.field}` : 'tls_client_auth_*';
      throw oauth2Error('invalid_client', {
        hint: `The TLS client certificate does not match the OAuth 2.0 Client's registered ${field}.`,
      });
    }
    return;
  }
  // §2.2: no chain; the certificate's key must be one the client registered. A jwks_uri that may
  // have rotated is fetched again once (rate-limited), as for an unknown private_key_jwt kid.
  const keys = await clientKeys(d, client, false);
  if (await certificateKeyIn(cert, keys.keys)) return;
  if (keys.fetched && (await certificateKeyIn(cert, (await clientKeys(d, client, true)).keys))) return;
  throw oauth2Error('invalid_client', {
    hint: "The TLS client certificate's public key is not one of the OAuth 2.0 Client's registered keys (jwks or jwks_uri).",
  });
}

/** RFC 7523 §3 claims of a verified client assertion; records its `jti` so that it is used once. */
async function checkAssertionClaims(d: ClientAuthDeps, claims: Record<string, unknown>, id: string): Promise<void> {
  if (claims.iss !== id) {
    throw oauth2Error('invalid_client', {
      hint: "Claim 'iss' from 'client_assertion' must match the 'client_id' of the OAuth 2.0 Client.",
    });
  }
  const jti = typeof claims.jti === 'string' ? claims.jti : '';
  if (!jti)
    throw oauth2Error('invalid_client', { hint: "Claim 'jti' from 'client_assertion' must be set but is not." });
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.some((a) => typeof a === 'string' && d.tokenUrls.includes(a))) {
    throw oauth2Error('invalid_client', {
      hint: `Claim 'audience' from 'client_assertion' must match the authorization server's token endpoint '${d.tokenUrls.join("' or '")}'.`,
    });
  }
  const jtiHash = createHash('sha256').update(jti).digest('hex');
  if (!(await insertJtiGrouped(d.db, jtiHash, new Date(Number(claims.exp) * 1000), d.clock.now()))) {
    throw oauth2Error('jti_known', { hint: "Claim 'jti' from 'client_assertion' MUST only be used once." });
  }
}

/** The client must be registered for private_key_jwt, with the signing algorithm it uses. */
function checkAssertionMethod(client: FlowClient, alg: string | undefined): asserts alg is string {
  const method = client.tokenEndpointAuthMethod;
  if (method === 'none') {
    throw oauth2Error('invalid_client', {
      hint: "This requested OAuth 2.0 client does not support client authentication, however 'client_assertion' was provided in the request.",
    });
  }
  if (method !== 'private_key_jwt') {
    throw oauth2Error('invalid_client', {
      hint: `This requested OAuth 2.0 client only supports client authentication method '${method}', however 'client_assertion' was provided in the request.`,
    });
  }
  const expected = client.tokenEndpointAuthSigningAlg || 'RS256';
  if (alg !== expected) {
    throw oauth2Error('invalid_client', {
      hint: `The 'client_assertion' uses signing algorithm '${alg}' but the requested OAuth 2.0 Client enforces signing algorithm '${expected}'.`,
    });
  }
  if (!ASSERTION_ALGS.includes(alg)) {
    throw oauth2Error('invalid_client', {
      hint: `The 'client_assertion' request parameter uses unsupported signing algorithm '${alg}'.`,
    });
  }
}

async function assertionClient(d: ClientAuthDeps, assertion: string, formClientId: string): Promise<FlowClient> {
  let claims: Record<string, unknown>;
  let alg: string | undefined;
  try {
    claims = decodeJwt(assertion) as Record<string, unknown>;
    alg = decodeProtectedHeader(assertion).alg;
  } catch (e) {
    throw oauth2Error('invalid_client', {
      hint: "Unable to verify the integrity of the 'client_assertion' value.",
      debug: (e as Error).message,
    });
  }
  const id = typeof claims.sub === 'string' ? claims.sub : '';
  if (!id)
    throw oauth2Error('invalid_client', {
      hint: "The claim 'sub' from the client_assertion JSON Web Token is undefined.",
    });
  // RFC 7523 §3 / RFC 7521 §4.2: a client_id sent beside the assertion must name the same client.
  if (formClientId && formClientId !== id) {
    throw oauth2Error('invalid_client', {
      hint: "The 'client_id' request parameter does not match the claim 'sub' of the 'client_assertion'.",
    });
  }
  const client = await d.clients.get(id);
  if (!client) throw oauth2Error('invalid_client');
  checkAssertionMethod(client, alg);
  const keysOf = (refresh: boolean) => clientKeys(d, client, refresh);
  const verify = async (keys: Awaited<ReturnType<typeof keysOf>>) =>
    jwtVerify(assertion, createLocalJWKSet(keys), {
      algorithms: [alg],
      currentDate: d.clock.now(),
      requiredClaims: ['exp'],
    });
  const invalid = (e: unknown) =>
    oauth2Error('invalid_client', {
      hint: "Unable to verify the integrity of the 'client_assertion' value.",
      debug: (e as Error).message,
    });
  const keys = await keysOf(false);
  try {
    await verify(keys);
  } catch (e) {
    // An unknown kid may mean the client rotated its keys: refetch once (rate-limited).
    if (!(e instanceof joseErrors.JWKSNoMatchingKey) || !keys.fetched) throw invalid(e);
    try {
      await verify(await keysOf(true));
    } catch (e2) {
      if (e2 instanceof AppError) throw e2;
      throw invalid(e2);
    }
  }
  const maxExp = d.clock.now().getTime() + d.assertionMaxTtlMs;
  if (Number(claims.exp) * 1000 > maxExp) {
    throw oauth2Error('invalid_client', {
      hint: `The 'exp' claim of the 'client_assertion' is too far in the future: assertions may be valid for at most ${Math.round(d.assertionMaxTtlMs / 1000)} seconds.`,
    });
  }
  await checkAssertionClaims(d, claims, id);
  return client;
}

/** Authenticates the calling client; throws `invalid_request` (400) or `invalid_client` (401). */
export async function authenticateClient(d: ClientAuthDeps, input: ClientCredentialsInput): Promise<FlowClient> {
  const { form } = input;
  const assertionType = form.client_assertion_type ?? '';
  if (assertionType === JWT_BEARER_ASSERTION) {
    if (!form.client_assertion) {
      throw oauth2Error('invalid_request', {
        hint: `The client_assertion request parameter must be set when using client_assertion_type of '${JWT_BEARER_ASSERTION}'.`,
      });
    }
    return assertionClient(d, form.client_assertion, form.client_id ?? '');
  }
  if (assertionType)
    throw oauth2Error('invalid_request', { hint: `Unknown client_assertion_type '${assertionType}'.` });

  const basic = basicCredentials(input.authorization);
  const id = basic ? basic.id : (form.client_id ?? '');
  const secret = basic ? basic.secret : (form.client_secret ?? '');
  if (!id) {
    throw oauth2Error('invalid_request', {
      hint: 'Client credentials missing or malformed in both HTTP Authorization header and HTTP POST body.',
    });
  }
  const client = await d.clients.get(id);
  if (!client) {
    // Cost the same as a wrong secret (a decoy hash check), so timing does not tell which ids exist.
    await d.clients.verifySecret(undefined, secret);
    throw oauth2Error('invalid_client');
  }
  const method = client.tokenEndpointAuthMethod || 'client_secret_basic';
  if (!basic && form.client_id && form.client_secret && method !== 'client_secret_post') {
    throw wrongMethod(method, 'client_secret_post');
  }
  if (basic?.secret && method !== 'client_secret_basic') throw wrongMethod(method, 'client_secret_basic');
  if (TLS_METHODS.has(method)) {
    await certificateAuth(d, client, input.certificate);
    return client;
  }
  if (method === 'none') return client;
  if (!basic && !form.client_secret && method !== 'none') throw wrongMethod(method, 'none');
  if (!(await d.clients.verifySecret(client, secret))) throw oauth2Error('invalid_client');
  return client;
}
