/**
 * Client keys and client authentication under attack: jwks_uri is cached and fetched at a bounded
 * rate, failures tell nothing about the target, dynamically registered clients cannot reach
 * internal addresses; request objects, loopback redirects, client assertions, unknown-client
 * timing, and the registered claims of JWT access tokens.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startTestServer, type TestServer, whenNotified } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';
import {
  authorizeUrl,
  Browser,
  codeFlowUrl,
  createClient,
  exchangeCode,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';
import { selfSigned, startHttpsServer } from '../../helpers/tls.ts';

let t: TestServer;
let files: Server;
let filesUrl = '';
const served = new Map<string, { status: number; body: string }>();
const hits = new Map<string, number>();
let keys: Awaited<ReturnType<typeof generateKeyPair>>;
let jwk: Record<string, unknown>;

beforeAll(async () => {
  t = await startTestServer({ overrides: { 'oidc.dynamic_client_registration.enabled': true } });
  keys = await generateKeyPair('RS256');
  jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', use: 'sig', alg: 'RS256' };
  files = createServer((req, res) => {
    const path = req.url ?? '';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const r = served.get(path);
    if (!r) res.writeHead(404).end();
    else res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.body);
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  const a = files.address();
  filesUrl = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise((r) => files?.close(r));
  await t?.close();
});

const tokenUrl = () => `${t.publicUrl}/oauth2/token`;
const assertion = (clientId: string, opts: { jti?: string; exp?: string | number; kid?: string } = {}) =>
  new SignJWT({ jti: opts.jti ?? randomUUID() })
    .setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? 'k1' })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(tokenUrl())
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '5m')
    .sign(keys.privateKey);

async function clientCredentials(form: Record<string, string>) {
  const r = await fetch(tokenUrl(), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', ...form }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, string> };
}
const withAssertion = async (clientId: string, opts: Parameters<typeof assertion>[1] = {}, extra = {}) =>
  clientCredentials({
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: await assertion(clientId, opts),
    ...extra,
  });

const jwtClient = (jwksUri: string) =>
  createClient(t, {
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: 'read',
    token_endpoint_auth_method: 'private_key_jwt',
    jwks_uri: jwksUri,
  });

describe('private_key_jwt and jwks_uri', () => {
  it('fetches a jwks_uri once and reuses the key set (cache), across many authentications', async () => {
    served.set('/cached/jwks.json', { status: 200, body: JSON.stringify({ keys: [jwk] }) });
    const client = await jwtClient(`${filesUrl}/cached/jwks.json`);
    for (let i = 0; i < 5; i++) expect((await withAssertion(client.client_id)).status).toBe(200);
    expect(hits.get('/cached/jwks.json')).toBe(1);
  });

  it('answers every jwks_uri failure with one fixed description, and does not refetch a failure at once', async () => {
    const closed = await freePort();
    const targets = [`${filesUrl}/missing/jwks.json`, `${filesUrl}/teapot/jwks.json`, `http://127.0.0.1:${closed}/x`];
    served.set('/teapot/jwks.json', { status: 418, body: '{}' });
    const descriptions = new Set<string>();
    for (const uri of targets) {
      const client = await jwtClient(uri);
      for (let i = 0; i < 3; i++) {
        const r = await withAssertion(client.client_id);
        expect(r.status).toBe(401);
        expect(r.body.error).toBe('invalid_client');
        descriptions.add(r.body.error_description as string);
      }
    }
    expect(descriptions.size).toBe(1);
    const [only] = [...descriptions];
    expect(only).toContain('JSON Web Key Set could not be retrieved from its jwks_uri');
    expect(only).not.toMatch(/404|418|127\.0\.0\.1|refused|timeout|ms\b/i);
    // Three attempts per client, one fetch each: the failure is remembered (refetch rate limit).
    expect(hits.get('/missing/jwks.json')).toBe(1);
    expect(hits.get('/teapot/jwks.json')).toBe(1);
  });

  it('refuses a client_id form value that is not the assertion’s sub', async () => {
    served.set('/sub/jwks.json', { status: 200, body: JSON.stringify({ keys: [jwk] }) });
    const client = await jwtClient(`${filesUrl}/sub/jwks.json`);
    const other = await jwtClient(`${filesUrl}/sub/jwks.json`);
    const r = await withAssertion(client.client_id, {}, { client_id: other.client_id });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe('invalid_client');
    expect(r.body.error_description).toContain("does not match the claim 'sub'");
    expect((await withAssertion(client.client_id, {}, { client_id: client.client_id })).status).toBe(200);
  });

  it('refuses an assertion whose exp is further in the future than the maximum (1h by default)', async () => {
    served.set('/exp/jwks.json', { status: 200, body: JSON.stringify({ keys: [jwk] }) });
    const client = await jwtClient(`${filesUrl}/exp/jwks.json`);
    const far = await withAssertion(client.client_id, { exp: '2h' });
    expect(far.status).toBe(401);
    expect(far.body.error_description).toContain("'exp' claim of the 'client_assertion' is too far in the future");
    expect((await withAssertion(client.client_id, { exp: '50m' })).status).toBe(200);
  });
});

describe('request_uri failures', () => {
  it('say the same whatever the target answered', async () => {
    const closed = await freePort();
    const uris = [`${filesUrl}/nothing-here.jwt`, `http://127.0.0.1:${closed}/ro.jwt`];
    const client = await createClient(t, { jwks: { keys: [jwk] }, request_uris: uris });
    const descriptions = new Set<string>();
    for (const request_uri of uris) {
      const r = await new Browser().get(codeFlowUrl(t, client, 'openid', { request_uri }));
      expect(param(r.location, 'error')).toBe('invalid_request_uri');
      descriptions.add(param(r.location, 'error_description') as string);
    }
    expect(descriptions.size).toBe(1);
    expect([...descriptions][0]).not.toMatch(/404|200|127\.0\.0\.1|refused/);
  });
});

describe('dynamic registration and internal addresses', () => {
  it('refuses internal addresses in a registered client’s URIs, while the admin API keeps Hydra’s default', async () => {
    const body = {
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: `${filesUrl}/cached/jwks.json`,
    };
    const dyn = await call(t.publicUrl, 'POST', '/oauth2/register', body);
    expect(dyn.status).toBe(400);
    expect(dyn.body.error).toBe('invalid_client_metadata');
    expect(dyn.body.error_description).toContain('must not point to a private, loopback or otherwise internal address');
    for (const field of ['backchannel_logout_uri', 'request_uris']) {
      const value = field === 'request_uris' ? [`${filesUrl}/ro.jwt`] : `${filesUrl}/bc`;
      const r = await call(t.publicUrl, 'POST', '/oauth2/register', { [field]: value });
      expect(r.status, field).toBe(400);
    }
    const admin = await call(t.adminUrl, 'POST', '/admin/clients', body);
    expect(admin.status).toBe(201);
  });

  it('refuses them at use too (a name that resolved outward at registration)', async () => {
    served.set('/dyn/jwks.json', { status: 200, body: JSON.stringify({ keys: [jwk] }) });
    const dyn = await call(t.publicUrl, 'POST', '/oauth2/register', {
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://keys.example/jwks.json',
    });
    expect(dyn.status).toBe(201);
    // The name now points inward (DNS rebinding), here written straight into the row.
    await whenNotified(t, 'client', () =>
      sql`update oauth2_clients set jwks_uri = ${`${filesUrl}/dyn/jwks.json`} where id = ${dyn.body.client_id}`.execute(
        t.container.db,
      ),
    );
    const r = await withAssertion(dyn.body.client_id);
    expect(r.status).toBe(401);
    expect(hits.get('/dyn/jwks.json')).toBeUndefined();
  });

  it('allows internal addresses when oidc.dynamic_client_registration.allow_internal_addresses is set', async () => {
    const open = await startTestServer({
      overrides: {
        'oidc.dynamic_client_registration.enabled': true,
        'oidc.dynamic_client_registration.allow_internal_addresses': true,
      },
    });
    try {
      const r = await call(open.publicUrl, 'POST', '/oauth2/register', {
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: `${filesUrl}/cached/jwks.json`,
      });
      expect(r.status).toBe(201);
    } finally {
      await open.close();
    }
  });
});

describe('dynamic registration and sector_identifier_uri', () => {
  it('answers every failed fetch with the same description (no status, no cause)', async () => {
    const pair = selfSigned('sector.example.test');
    const sector = await startHttpsServer(pair, (req, res) => {
      if (req.url === '/teapot.json') res.writeHead(418).end('{}');
      else if (req.url === '/broken.json') res.writeHead(200, { 'content-type': 'application/json' }).end('{');
      else res.writeHead(404).end();
    });
    const dcr = await startTestServer({
      overrides: {
        'oidc.dynamic_client_registration.enabled': true,
        'oidc.dynamic_client_registration.allow_internal_addresses': true,
      },
      resolver: async (h) => {
        if (h === 'sector.example.test') return [{ address: '127.0.0.1', family: 4 }];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
      fetchOptions: { ca: pair.cert },
    });
    try {
      const closed = await freePort();
      const uris = [
        `https://sector.example.test:${sector.port}/missing.json`,
        `https://sector.example.test:${sector.port}/teapot.json`,
        `https://sector.example.test:${sector.port}/broken.json`,
        `https://sector.example.test:${closed}/sector.json`,
      ];
      const descriptions = new Set<string>();
      for (const sector_identifier_uri of uris) {
        const r = await call(dcr.publicUrl, 'POST', '/oauth2/register', {
          redirect_uris: ['https://rp.example/cb'],
          sector_identifier_uri,
        });
        expect(r.status).toBe(400);
        descriptions.add(r.body.error_description);
      }
      expect(descriptions.size).toBe(1);
      expect([...descriptions][0]).toMatch(/Unable to read the sector_identifier_uri\.$/);
      // The operator's admin API keeps the detailed reason.
      const admin = await call(dcr.adminUrl, 'POST', '/admin/clients', {
        redirect_uris: ['https://rp.example/cb'],
        sector_identifier_uri: uris[1],
      });
      expect(admin.body.error_description).toContain('418');
    } finally {
      await dcr.close();
      await sector.close();
    }
  });
});

describe('request objects', () => {
  const unsigned = (claims: Record<string, unknown>) => new UnsecuredJWT(claims).encode();
  const signed = (claims: Record<string, unknown>) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuedAt().sign(keys.privateKey);

  it('refuse alg none unless the client registered request_object_signing_alg none', async () => {
    const client = await createClient(t, { jwks: { keys: [jwk] } });
    const r = await new Browser().get(
      codeFlowUrl(t, client, 'openid', { request: unsigned({ state: 'from-unsigned-object' }) }),
    );
    expect(param(r.location, 'error')).toBe('invalid_request_object');
    expect(param(r.location, 'state')).not.toBe('from-unsigned-object');

    const none = await createClient(t, { jwks: { keys: [jwk] }, request_object_signing_alg: 'none' });
    const state = randomState();
    const ok = await runFlow(t, new Browser(), codeFlowUrl(t, none, 'openid', { request: unsigned({ state }) }));
    expect(param(ok.final, 'state')).toBe(state);
    expect(param(ok.final, 'code')).toBeTruthy();
  });

  it('refuse a client_id or response_type inside that differs from the query (OIDC Core §6.1)', async () => {
    const client = await createClient(t, { jwks: { keys: [jwk] } });
    const other = await createClient(t, { jwks: { keys: [jwk] } });
    for (const claims of [{ client_id: other.client_id }, { response_type: 'token' }]) {
      const r = await new Browser().get(codeFlowUrl(t, client, 'openid', { request: await signed(claims) }));
      expect(param(r.location, 'error'), JSON.stringify(claims)).toBe('invalid_request_object');
    }
    const same = await runFlow(
      t,
      new Browser(),
      codeFlowUrl(t, client, 'openid', {
        request: await signed({ client_id: client.client_id, response_type: 'code' }),
      }),
    );
    expect(param(same.final, 'code')).toBeTruthy();
  });
});

describe('loopback redirect URIs', () => {
  it('keep the registered scheme: a registered https loopback URI does not admit http on another port', async () => {
    const client = await createClient(t, { redirect_uris: ['https://127.0.0.1/cb'] });
    const r = await new Browser().get(
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'code',
        scope: 'openid',
        state: randomState(),
        redirect_uri: 'http://127.0.0.1:1234/cb',
      }),
    );
    expect(r.location).not.toMatch(/^http:\/\/127\.0\.0\.1:1234/);
    expect(param(r.location, 'error')).toBe('invalid_request');
    // A registered http loopback URI still admits any port (RFC 8252 §7.3).
    const loop = await createClient(t, { redirect_uris: ['http://127.0.0.1/cb'] });
    const ok = await new Browser().get(
      authorizeUrl(t, {
        client_id: loop.client_id,
        response_type: 'code',
        scope: 'openid',
        state: randomState(),
        redirect_uri: 'http://127.0.0.1:1234/cb',
      }),
    );
    expect(param(ok.location, 'login_challenge')).toBeTruthy();
  });
});

describe('client authentication timing', () => {
  it('an unknown client costs as much as a wrong secret (a decoy check, the same answer)', async () => {
    // A generated secret is checked with a keyed hash; an unknown id pays a decoy check of the same
    // kind. The slowest part of both is the request itself, so the fastest of several attempts of
    // each must be of the same order (before the decoy, an unknown id skipped the check).
    const known = await createClient(t, { grant_types: ['client_credentials'], scope: 'read' });
    const attempt = async (id: string) => {
      const started = performance.now();
      const r = await fetch(tokenUrl(), {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${id}:wrong-secret`).toString('base64')}`,
        },
        body: 'grant_type=client_credentials',
      });
      return { ms: performance.now() - started, status: r.status, body: await r.json() };
    };
    await attempt(randomUUID()); // warm up both paths
    await attempt(known.client_id);
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 5; i++) {
      const w = await attempt(known.client_id);
      const u = await attempt(randomUUID());
      expect(w.status).toBe(401);
      expect(u.status).toBe(401);
      expect(u.body).toEqual(w.body);
      wrong.push(w.ms);
      unknown.push(u.ms);
    }
    expect(Math.min(...unknown)).toBeGreaterThan(Math.min(...wrong) / 3);
  });
});

describe('JWT access tokens', () => {
  it('never take scope or other registered claims from consent session data', async () => {
    const jt = await startTestServer({
      overrides: {
        'strategies.access_token': 'jwt',
        'oauth2.allowed_top_level_claims': ['scope', 'acr', 'client_id', 'tenant'],
      },
    });
    try {
      const client = await createClient(jt);
      const r = await runFlow(jt, new Browser(), codeFlowUrl(jt, client, 'openid offline'), {
        consent: (q) => ({
          grant_scope: q.requested_scope,
          session: { access_token: { scope: 'admin everything', acr: 'forged', client_id: 'other', tenant: 't1' } },
        }),
      });
      const tok = await exchangeCode(jt, client, param(r.final, 'code') as string);
      expect(tok.status).toBe(200);
      const claims = decodeJwt(tok.body.access_token as string);
      expect(claims.scope).toBeUndefined();
      expect(claims.scp).toEqual(['openid', 'offline']);
      expect(claims.acr).toBeUndefined();
      expect(claims.client_id).toBe(client.client_id);
      expect(claims.tenant).toBe('t1');
      expect(claims.ext).toMatchObject({ scope: 'admin everything' });
    } finally {
      await jt.close();
    }
  });
});
