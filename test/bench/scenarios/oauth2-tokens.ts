/**
 * Token issuance with client_credentials (opaque, JWT, stateless JWT) and introspection. The
 * issuance scenarios run on their own servers with the same settings so that only the token format
 * differs: PBKDF2 at 1000 iterations (the default 25000 makes client authentication dominate every
 * request) and the JWK cache on (the signing key is not re-read per token).
 */
import type { BenchRequest, Scenario } from '../types.ts';
import type { TestServerLike } from '../server.ts';

const COMMON = { 'oauth2.hashers.pbkdf2.iterations': 1000, 'db.jwk_cache.enabled': true, 'db.jwk_cache.ttl': '10m' };

async function machineClient(s: TestServerLike, extra: Record<string, unknown> = {}) {
  const r = await fetch(`${s.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_types: ['client_credentials'], scope: 'read write', ...extra }),
  });
  if (r.status !== 201) throw new Error(`client create answered ${r.status}`);
  return (await r.json()) as { client_id: string; client_secret: string };
}

/** Adds an ES256 key to `hydra.jwt.access-token`: it becomes the signing key (cheaper than RSA-4096). */
async function es256SigningKey(s: TestServerLike) {
  const r = await fetch(`${s.adminUrl}/admin/keys/hydra.jwt.access-token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ alg: 'ES256', use: 'sig', kid: 'bench-es256' }),
  });
  if (r.status !== 201) throw new Error(`key create answered ${r.status}`);
}

async function tokenRequest(s: TestServerLike, extra: Record<string, unknown> = {}): Promise<BenchRequest> {
  const c = await machineClient(s, extra);
  const req: BenchRequest = {
    method: 'POST',
    path: '/oauth2/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials&scope=read',
  };
  // Warm up (key generation for JWTs) and check that the request works.
  const r = await fetch(`${s.publicUrl}${req.path}`, { method: 'POST', headers: req.headers, body: req.body });
  if (r.status !== 200) throw new Error(`token endpoint answered ${r.status}`);
  return req;
}

export const scenarios: Scenario[] = [
  {
    name: 'POST /oauth2/token client_credentials, opaque (public)',
    listener: 'public',
    overrides: COMMON,
    setup: async (s) => [await tokenRequest(s)],
  },
  {
    name: 'POST /oauth2/token client_credentials, JWT RS256-4096 (public)',
    listener: 'public',
    overrides: COMMON,
    setup: async (s) => [await tokenRequest(s, { access_token_strategy: 'jwt' })],
  },
  {
    name: 'POST /oauth2/token client_credentials, stateless JWT RS256-4096 (public)',
    listener: 'public',
    overrides: { ...COMMON, 'strategies.jwt.stateless.enabled': true },
    setup: async (s) => [await tokenRequest(s)],
  },
  {
    name: 'POST /oauth2/token client_credentials, JWT ES256 (public)',
    listener: 'public',
    overrides: COMMON,
    setup: async (s) => {
      await es256SigningKey(s);
      return [await tokenRequest(s, { access_token_strategy: 'jwt' })];
    },
  },
  {
    name: 'POST /oauth2/token client_credentials, stateless JWT ES256 (public)',
    listener: 'public',
    overrides: { ...COMMON, 'strategies.jwt.stateless.enabled': true },
    setup: async (s) => {
      await es256SigningKey(s);
      return [await tokenRequest(s)];
    },
  },
  {
    name: 'POST /admin/oauth2/introspect, opaque access token (admin)',
    listener: 'admin',
    setup: async (s) => {
      const req = await tokenRequest(s);
      const r = await fetch(`${s.publicUrl}${req.path}`, { method: 'POST', headers: req.headers, body: req.body });
      const token = ((await r.json()) as { access_token: string }).access_token;
      return [
        {
          method: 'POST',
          path: '/admin/oauth2/introspect',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token }).toString(),
        },
      ];
    },
  },
];
