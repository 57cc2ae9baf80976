/**
 * OAuth 2.0 hot paths beside node-oidc-provider (in-memory adapter, one client_secret_basic client):
 * client_credentials issuing opaque and JWT ES256 access tokens (and opaque ones bound by a DPoP
 * proof per request), introspection of an opaque token,
 * the discovery document and the JWKS. gatehouse runs with its defaults (the PBKDF2 client-secret
 * hasher at its default cost included); only the token format differs between scenarios.
 */
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import type { Proc } from '../proc.ts';
import type { BenchRequest, Scenario, Side } from '../types.ts';

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
/** The client the oidc-provider peer registers (test/bench/peers/oidc-provider.mjs). */
const PEER_AUTH = basic('bench', 'bench-secret-0123456789abcdef0123');

/** Sends `r` once and throws unless it is answered `status`. */
export async function check(url: string, r: BenchRequest, status = 200): Promise<Response> {
  const res = await fetch(`${url}${r.path}`, {
    method: r.method ?? 'GET',
    headers: r.headers ?? {},
    ...(typeof r.body === 'string' ? { body: r.body } : {}),
  });
  if (res.status !== status)
    throw new Error(`${r.method ?? 'GET'} ${r.path} answered ${res.status}: ${await res.text()}`);
  return res;
}

/** A `client_credentials` client (`read write`) through the admin API; `extra` adds to or replaces fields. */
export async function machineClient(p: Proc, extra: Record<string, unknown> = {}) {
  const r = await fetch(`${p.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_types: ['client_credentials'], scope: 'read write', ...extra }),
  });
  if (r.status !== 201) throw new Error(`client create answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as { client_id: string; client_secret: string };
}

/** Adds an ES256 key to `hydra.jwt.access-token`: the newest key, so the one JWT access tokens are signed with. */
export async function es256SigningKey(p: Proc) {
  const r = await fetch(`${p.adminUrl}/admin/keys/hydra.jwt.access-token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ alg: 'ES256', use: 'sig', kid: `bench-es256-${Date.now()}` }),
  });
  if (r.status !== 201) throw new Error(`key create answered ${r.status}: ${await r.text()}`);
}

/** A new machine client's `client_credentials` token request (`scope=read`), checked once. */
export async function ghToken(p: Proc, clientExtra: Record<string, unknown> = {}): Promise<BenchRequest> {
  const c = await machineClient(p, clientExtra);
  const req: BenchRequest = {
    method: 'POST',
    path: '/oauth2/token',
    headers: { ...FORM, authorization: basic(c.client_id, c.client_secret) },
    body: 'grant_type=client_credentials&scope=read',
  };
  await check(p.url, req);
  return req;
}

function peerToken(resource?: string): Side {
  return {
    url: (p) => p.url,
    async setup(p) {
      const req: BenchRequest = {
        method: 'POST',
        path: '/token',
        headers: { ...FORM, authorization: PEER_AUTH },
        body: `grant_type=client_credentials&scope=read${resource ? `&resource=${encodeURIComponent(resource)}` : ''}`,
      };
      await check(p.url, req);
      return [req];
    },
  };
}

/**
 * Token requests, each with a fresh DPoP proof (RFC 9449) of one ES256 key: a new `jti` and the
 * current `iat` per request, signed synchronously when autocannon builds the request (a proof is
 * accepted once, so the requests cannot be prepared in advance).
 */
function dpopRequests(path: string, htu: string, authorization: string): BenchRequest {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' });
  const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } })).toString(
    'base64url',
  );
  const proof = () => {
    const claims = { jti: randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) };
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    const sig = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
    return `${input}.${sig.toString('base64url')}`;
  };
  const body = 'grant_type=client_credentials&scope=read';
  return {
    method: 'POST',
    path,
    headers: { ...FORM, authorization },
    body,
    each: () => ({ path, headers: { ...FORM, authorization, dpop: proof() }, body }),
  };
}

/** Checks that one DPoP request of `req` is answered with a bound token. */
async function checkDpop(url: string, req: BenchRequest): Promise<void> {
  const one = req.each?.(0);
  if (!one) throw new Error('not a DPoP request');
  const res = await fetch(`${url}${one.path}`, { method: 'POST', headers: one.headers, body: one.body });
  const body = (await res.json()) as { token_type?: string };
  if (res.status !== 200 || body.token_type?.toLowerCase() !== 'dpop')
    throw new Error(`DPoP token request answered ${res.status}: ${JSON.stringify(body)}`);
}

const getOnly = (path: string): Side => ({
  url: (p) => p.url,
  async setup(p) {
    await check(p.url, { path });
    return [{ path }];
  },
});

/** gatehouse: `client_credentials` from one machine client (opaque tokens at the defaults). */
export const ghClientCredentials: Side = { url: (p) => p.url, setup: async (p) => [await ghToken(p)] };

/** The config of the stateless JWT scenarios. */
export const STATELESS = { 'strategies.jwt.stateless.enabled': true };

/** gatehouse: `client_credentials` signed with a new ES256 key (stateless JWTs with STATELESS). */
export const ghStatelessJwt: Side = {
  url: (p) => p.url,
  async setup(p) {
    await es256SigningKey(p);
    return [await ghToken(p)];
  },
};

/** gatehouse: admin introspection of one opaque access token. */
export const ghIntrospection: Side = {
  url: (p) => p.adminUrl,
  async setup(p) {
    const res = await check(p.url, await ghToken(p));
    const token = ((await res.json()) as { access_token: string }).access_token;
    const req: BenchRequest = {
      method: 'POST',
      path: '/admin/oauth2/introspect',
      headers: FORM,
      body: new URLSearchParams({ token }).toString(),
    };
    await check(p.adminUrl, req);
    return [req];
  },
};

export const scenarios: Scenario[] = [
  {
    name: 'token: client_credentials, opaque',
    gatehouse: ghClientCredentials,
    peer: { kind: 'oidc-provider', side: peerToken() },
  },
  {
    name: 'token: client_credentials, JWT ES256 (stored)',
    gatehouse: {
      url: (p) => p.url,
      async setup(p) {
        await es256SigningKey(p);
        return [await ghToken(p, { access_token_strategy: 'jwt' })];
      },
    },
    peer: { kind: 'oidc-provider', side: peerToken('urn:bench:jwt') },
  },
  {
    name: 'token: client_credentials, stateless JWT ES256',
    overrides: STATELESS,
    gatehouse: ghStatelessJwt,
    peer: { kind: 'oidc-provider', side: peerToken('urn:bench:jwt') },
  },
  {
    name: 'token: client_credentials with DPoP (ES256 proof per request), opaque',
    gatehouse: {
      url: (p) => p.url,
      async setup(p) {
        const c = await machineClient(p);
        const doc = (await (await fetch(`${p.url}/.well-known/openid-configuration`)).json()) as {
          token_endpoint: string;
        };
        const req = dpopRequests('/oauth2/token', doc.token_endpoint, basic(c.client_id, c.client_secret));
        await checkDpop(p.url, req);
        return [req];
      },
    },
    peer: {
      kind: 'oidc-provider',
      side: {
        url: (p) => p.url,
        async setup(p) {
          const req = dpopRequests('/token', `${p.url}/token`, PEER_AUTH);
          await checkDpop(p.url, req);
          return [req];
        },
      },
    },
  },
  {
    name: 'introspection of an opaque token',
    gatehouse: ghIntrospection,
    peer: {
      kind: 'oidc-provider',
      side: {
        url: (p) => p.url,
        async setup(p) {
          const [tokenReq] = await (peerToken().setup(p) as Promise<BenchRequest[]>);
          const res = await check(p.url, tokenReq as BenchRequest);
          const token = ((await res.json()) as { access_token: string }).access_token;
          const req: BenchRequest = {
            method: 'POST',
            path: '/token/introspection',
            headers: { ...FORM, authorization: PEER_AUTH },
            body: new URLSearchParams({ token }).toString(),
          };
          await check(p.url, req);
          return [req];
        },
      },
    },
  },
  {
    name: 'discovery: GET /.well-known/openid-configuration',
    gatehouse: getOnly('/.well-known/openid-configuration'),
    peer: { kind: 'oidc-provider', side: getOnly('/.well-known/openid-configuration') },
  },
  {
    name: 'jwks: GET /.well-known/jwks.json',
    gatehouse: getOnly('/.well-known/jwks.json'),
    peer: { kind: 'oidc-provider', side: getOnly('/jwks') },
  },
];
