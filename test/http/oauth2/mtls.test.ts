/**
 * Mutual TLS (RFC 8705) on a TLS public listener: `tls_client_auth` by subject DN and by SAN,
 * `self_signed_tls_client_auth` by the client's JWKS, certificate-bound access tokens (`cnf.x5t#S256`
 * in JWTs and introspection, `/userinfo` only over a connection with the same certificate), public
 * clients' certificate-bound refresh tokens (§4; confidential clients' stay unbound), the client
 * metadata's checks, discovery, and a TLS-terminating proxy's certificate header (believed
 * only from its addresses, and only for certificates that chain to `oauth2.mtls.ca`). A test CA
 * issues the server's and the clients' certificates (openssl); openid-client v6 with
 * `TlsClientAuth()` is the client of one flow.
 */
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'node:https';
import { decodeJwt, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, whenNotified } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';
import { CB, type CreatedClient, createClient, param, pkcePair, randomState } from '../../helpers/oauth2.ts';
import { issuedBy, selfSigned, type TlsPair, testCa } from '../../helpers/tls.ts';

const DN = '/C=DE/O=Acme Corp/CN=client-a';
const ca = testCa();
const otherCa = testCa('Other Test CA');
const serverCert = issuedBy(ca, '/CN=127.0.0.1', 'IP:127.0.0.1,DNS:localhost', 'serverAuth');
const clientA = issuedBy(ca, DN, 'DNS:client-a.example.com,URI:https://client-a.example.com/id', 'clientAuth');
const clientB = issuedBy(ca, '/C=DE/O=Acme Corp/CN=client-b', 'DNS:client-b.example.com', 'clientAuth');
/** Same subject as clientA, but no CA this server trusts vouches for it. */
const forgedSelf = selfSigned('client-a.example.com', DN);
const forgedOtherCa = issuedBy(otherCa, DN, 'DNS:client-a.example.com', 'clientAuth');
const selfA = selfSigned('self-a');
const selfB = selfSigned('self-b');

/** RFC 8705 §3.1: base64url(SHA-256(DER)). */
const x5t = (p: TlsPair) => createHash('sha256').update(new X509Certificate(p.cert).raw).digest('base64url');
const publicJwk = (p: TlsPair) => createPublicKey(p.cert).export({ format: 'jwk' }) as JWK;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: Record<string, unknown>;
}

/** One request on a fresh connection (no reused TLS session), trusting the test CA, with `cert` as the client certificate. */
function tlsRequest(
  url: string,
  o: { method?: string; headers?: Record<string, string>; body?: string; cert?: TlsPair | undefined } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: o.method ?? 'GET',
        headers: o.headers ?? {},
        ca: ca.cert,
        agent: false,
        ...(o.cert ? { cert: o.cert.cert, key: o.cert.key } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // not JSON (an empty 200 of revocation)
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

const form = (f: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(f).toString(),
});

let t: TestServer;

/** A client_credentials token request of `client` (its id in the form), over a connection with `cert`. */
const token = (client: CreatedClient, cert?: TlsPair, extra: Record<string, string> = {}) =>
  tlsRequest(`${t.publicUrl}/oauth2/token`, {
    ...form({ grant_type: 'client_credentials', scope: 'read', client_id: client.client_id, ...extra }),
    cert,
  });

const mtlsClient = (fields: Record<string, unknown>) =>
  createClient(t, {
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: 'read',
    token_endpoint_auth_method: 'tls_client_auth',
    ...fields,
  });

async function introspect(server: TestServer, value: string) {
  const r = await fetch(`${server.adminUrl}/admin/oauth2/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: value }).toString(),
  });
  return (await r.json()) as Record<string, unknown>;
}

async function adminCreate(body: Record<string, unknown>) {
  const r = await fetch(`${t.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_types: ['client_credentials'], scope: 'read', ...body }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  t = await startTestServer({
    publicTls: serverCert,
    overrides: { 'oauth2.mtls.enabled': true, 'oauth2.mtls.ca': ca.cert },
  });
});
afterAll(() => t?.close());

describe('tls_client_auth (RFC 8705 §2.1)', () => {
  let byDn: CreatedClient;
  let bySan: CreatedClient;
  beforeAll(async () => {
    byDn = await mtlsClient({ tls_client_auth_subject_dn: 'CN=client-a,O=Acme Corp,C=DE' });
    bySan = await mtlsClient({ tls_client_auth_san_dns: 'client-a.example.com' });
  });

  it('authenticates by subject DN, compared in canonical form (order, case, spacing)', async () => {
    const r = await token(byDn, clientA);
    expect(r.status, r.text).toBe(200);
    expect(r.json.token_type).toBe('bearer');
    expect(typeof r.json.access_token).toBe('string');
    const spelled = await mtlsClient({ tls_client_auth_subject_dn: 'cn=CLIENT-A, o=acme  corp,C=de' });
    expect((await token(spelled, clientA)).status).toBe(200);
  });

  it('authenticates by SAN (DNS, and URI)', async () => {
    const r = await token(bySan, clientA);
    expect(r.status, r.text).toBe(200);
    const byUri = await mtlsClient({ tls_client_auth_san_uri: 'https://client-a.example.com/id' });
    expect((await token(byUri, clientA)).status).toBe(200);
    expect((await token(byUri, clientB)).status).toBe(401);
  });

  it('refuses a certificate with another subject or without the SAN: invalid_client', async () => {
    for (const [client, cert] of [
      [byDn, clientB],
      [bySan, clientB],
    ] as const) {
      const r = await token(client, cert);
      expect(r.status).toBe(401);
      expect(r.json.error).toBe('invalid_client');
      expect(String(r.json.error_description)).toMatch(/does not match/);
    }
  });

  it('refuses a request without a certificate: invalid_client', async () => {
    const r = await token(byDn);
    expect(r.status).toBe(401);
    expect(r.json.error).toBe('invalid_client');
    expect(String(r.json.error_description)).toMatch(/without a TLS client certificate/);
  });

  it('refuses a self-signed or foreign-CA certificate with the right names (not PKI-verified)', async () => {
    for (const cert of [forgedSelf, forgedOtherCa]) {
      for (const client of [byDn, bySan]) {
        const r = await token(client, cert);
        expect(r.status).toBe(401);
        expect(r.json.error).toBe('invalid_client');
        expect(String(r.json.error_description)).toMatch(/not issued by a certificate authority this server trusts/);
      }
    }
  });

  it('refuses a client secret sent by a tls_client_auth client', async () => {
    const r = await token(byDn, clientA, { client_secret: 'whatever-secret' });
    expect(r.status).toBe(401);
    expect(r.json.error).toBe('invalid_client');
  });

  it('authenticates at the pushed authorization request and device authorization endpoints', async () => {
    const browserClient = await mtlsClient({
      grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
      redirect_uris: ['https://client-a.example.com/cb'],
      scope: 'openid',
      tls_client_auth_san_dns: 'client-a.example.com',
    });
    const par = {
      client_id: browserClient.client_id,
      response_type: 'code',
      redirect_uri: 'https://client-a.example.com/cb',
      scope: 'openid',
      state: 'state-of-par',
    };
    const pushed = await tlsRequest(`${t.publicUrl}/oauth2/par`, { ...form(par), cert: clientA });
    expect(pushed.status, pushed.text).toBe(201);
    expect(String(pushed.json.request_uri)).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    expect((await tlsRequest(`${t.publicUrl}/oauth2/par`, { ...form(par), cert: clientB })).status).toBe(401);
    const device = { client_id: browserClient.client_id, scope: 'openid' };
    const codes = await tlsRequest(`${t.publicUrl}/oauth2/device/auth`, { ...form(device), cert: clientA });
    expect(codes.status, codes.text).toBe(200);
    expect(typeof codes.json.device_code).toBe('string');
    expect((await tlsRequest(`${t.publicUrl}/oauth2/device/auth`, form(device))).status).toBe(401);
  });

  it('authenticates at the revocation endpoint too', async () => {
    const issued = await token(byDn, clientA);
    const at = issued.json.access_token as string;
    expect((await introspect(t, at)).active).toBe(true);
    const refused = await tlsRequest(`${t.publicUrl}/oauth2/revoke`, {
      ...form({ token: at, client_id: byDn.client_id }),
    });
    expect(refused.status).toBe(401);
    expect((await introspect(t, at)).active).toBe(true);
    const r = await tlsRequest(`${t.publicUrl}/oauth2/revoke`, {
      ...form({ token: at, client_id: byDn.client_id }),
      cert: clientA,
    });
    expect(r.status).toBe(200);
    expect((await introspect(t, at)).active).toBe(false);
  });
});

describe('self_signed_tls_client_auth (RFC 8705 §2.2)', () => {
  it("authenticates a certificate whose key is in the client's jwks; another is invalid_client", async () => {
    const client = await mtlsClient({
      token_endpoint_auth_method: 'self_signed_tls_client_auth',
      jwks: { keys: [{ ...publicJwk(selfA), use: 'sig' }] },
    });
    const ok = await token(client, selfA);
    expect(ok.status, ok.text).toBe(200);
    const other = await token(client, selfB);
    expect(other.status).toBe(401);
    expect(other.json.error).toBe('invalid_client');
    expect(String(other.json.error_description)).toMatch(/not one of the OAuth 2.0 Client's registered keys/);
    expect((await token(client)).status).toBe(401);
  });
});

describe('certificate-bound access tokens (RFC 8705 §3)', () => {
  let client: CreatedClient;
  let accessToken: string;
  beforeAll(async () => {
    client = await mtlsClient({
      tls_client_auth_san_dns: 'client-a.example.com',
      tls_client_certificate_bound_access_tokens: true,
      access_token_strategy: 'jwt',
    });
    const r = await token(client, clientA);
    expect(r.status, r.text).toBe(200);
    accessToken = r.json.access_token as string;
  });

  it('binds the token: cnf.x5t#S256 in the JWT and in introspection, token_type stays Bearer', async () => {
    expect(decodeJwt(accessToken).cnf).toEqual({ 'x5t#S256': x5t(clientA) });
    const i = await introspect(t, accessToken);
    expect(i.active).toBe(true);
    expect(i.cnf).toEqual({ 'x5t#S256': x5t(clientA) });
    expect(i.token_type).toBe('Bearer');
  });

  it('userinfo accepts the token only over a connection with the same certificate', async () => {
    const auth = { authorization: `Bearer ${accessToken}` };
    const same = await tlsRequest(`${t.publicUrl}/userinfo`, { headers: auth, cert: clientA });
    expect(same.status, same.text).toBe(200);
    expect(same.json.sub).toBe(client.client_id);
    for (const cert of [clientB, undefined]) {
      const r = await tlsRequest(`${t.publicUrl}/userinfo`, { headers: auth, cert });
      expect(r.status).toBe(401);
      expect(r.json.error).toBe('invalid_token');
      expect(r.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token"/);
    }
  });

  it('a client with the flag and another auth method: bound with a certificate, refused without', async () => {
    const basic = await createClient(t, {
      grant_types: ['client_credentials'],
      scope: 'read',
      tls_client_certificate_bound_access_tokens: true,
    });
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${basic.client_id}:${basic.client_secret}`).toString('base64')}`,
    };
    const body = new URLSearchParams({ grant_type: 'client_credentials', scope: 'read' }).toString();
    const url = `${t.publicUrl}/oauth2/token`;
    const bound = await tlsRequest(url, { method: 'POST', headers, body, cert: selfB });
    expect(bound.status, bound.text).toBe(200);
    expect((await introspect(t, bound.json.access_token as string)).cnf).toEqual({ 'x5t#S256': x5t(selfB) });
    const without = await tlsRequest(url, { method: 'POST', headers, body });
    expect(without.status).toBe(400);
    expect(without.json.error).toBe('invalid_request');
    expect(String(without.json.error_description)).toMatch(/tls_client_certificate_bound_access_tokens/);
  });

  it('a client without the flag gets unbound tokens even when it presents a certificate', async () => {
    const plain = await mtlsClient({ tls_client_auth_san_dns: 'client-a.example.com' });
    const r = await token(plain, clientA);
    expect(r.status).toBe(200);
    const i = await introspect(t, r.json.access_token as string);
    expect(i.active).toBe(true);
    expect(i.cnf).toBeUndefined();
    const info = await tlsRequest(`${t.publicUrl}/userinfo`, {
      headers: { authorization: `Bearer ${r.json.access_token}` },
    });
    expect(info.status).toBe(200);
  });

  it('token exchange: a certificate-bound subject_token is exchanged only over a connection with its certificate', async () => {
    const exchanger = await createClient(t, {
      grant_types: ['urn:ietf:params:oauth:grant-type:token-exchange'],
      response_types: [],
      redirect_uris: [],
      scope: 'read',
    });
    const subject = await mtlsClient({
      tls_client_auth_san_dns: 'client-a.example.com',
      tls_client_certificate_bound_access_tokens: true,
      audience: [exchanger.client_id],
    });
    const issued = await token(subject, clientA, { audience: exchanger.client_id });
    expect(issued.status, issued.text).toBe(200);
    const exchange = (cert: TlsPair | undefined) =>
      tlsRequest(`${t.publicUrl}/oauth2/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${exchanger.client_id}:${exchanger.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          subject_token: issued.json.access_token as string,
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        }).toString(),
        cert,
      });
    for (const cert of [selfB, undefined]) {
      const r = await exchange(cert);
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('invalid_request');
      expect(String(r.json.error_description)).toMatch(/certificate-bound/);
    }
    const ok = await exchange(clientA);
    expect(ok.status, ok.text).toBe(200);
  });

  it('openid-client v6 with TlsClientAuth(): client credentials and userinfo over mutual TLS', async () => {
    const mtlsFetch: oidc.CustomFetch = async (url, o) => {
      const r = await tlsRequest(url, {
        method: o.method,
        headers: o.headers,
        ...(o.body == null ? {} : { body: String(o.body) }),
        cert: clientA,
      });
      const headers = new Headers();
      for (const [k, v] of Object.entries(r.headers)) if (v !== undefined) headers.set(k, String(v));
      return new Response(r.status === 204 ? null : r.text, { status: r.status, headers });
    };
    const config = await oidc.discovery(
      new URL(t.container.config.urls.self.issuer),
      client.client_id,
      undefined,
      oidc.TlsClientAuth(),
      {
        [oidc.customFetch]: mtlsFetch,
      },
    );
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'read' });
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ 'x5t#S256': x5t(clientA) });
    const info = await oidc.fetchUserInfo(config, tokens.access_token, oidc.skipSubjectCheck);
    expect(info.sub).toBe(client.client_id);
  });
});

describe('certificate-bound refresh tokens of public clients (RFC 8705 §4)', () => {
  /** The code flow through the TLS listener (its cookies kept), login and consent accepted on the admin API. */
  async function codeOverTls(client: CreatedClient): Promise<{ code: string; verifier: string }> {
    const pkce = pkcePair();
    const cookies = new Map<string, string>();
    const get = async (url: string) => {
      const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
      const r = await tlsRequest(url, { headers: cookie ? { cookie } : {} });
      for (const c of [r.headers['set-cookie'] ?? []].flat()) {
        const pair = c.split(';')[0] ?? '';
        cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
      }
      expect([302, 303], r.text).toContain(r.status);
      return String(r.headers.location);
    };
    const accept = async (kind: 'login' | 'consent', challenge: string, body: Record<string, unknown>) => {
      const path = `/admin/oauth2/auth/requests/${kind}/accept?${kind}_challenge=${encodeURIComponent(challenge)}`;
      const r = await call(t.adminUrl, 'PUT', path, body);
      expect(r.status).toBe(200);
      return String((r.body as { redirect_to: string }).redirect_to);
    };
    const authorize = new URL('/oauth2/auth', t.publicUrl);
    authorize.search = new URLSearchParams({
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid offline_access',
      state: randomState(),
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    }).toString();
    const login = param(await get(authorize.toString()), 'login_challenge') ?? '';
    const consent = param(await get(await accept('login', login, { subject: 'alice' })), 'consent_challenge') ?? '';
    const back = await get(await accept('consent', consent, { grant_scope: ['openid', 'offline_access'] }));
    return { code: param(back, 'code') ?? '', verifier: pkce.verifier };
  }

  const codeClient = (fields: Record<string, unknown>) =>
    createClient(t, {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [CB],
      scope: 'openid offline_access',
      tls_client_certificate_bound_access_tokens: true,
      ...fields,
    });
  /** A token request of `client` (client_secret_basic when it has a secret, else its id in the form) over a connection with `cert`. */
  const tokenOf = (client: CreatedClient, fields: Record<string, string>, cert: TlsPair | undefined) =>
    tlsRequest(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(client.client_secret
          ? { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` }
          : {}),
      },
      body: new URLSearchParams({
        ...fields,
        ...(client.client_secret ? {} : { client_id: client.client_id }),
      }).toString(),
      cert,
    });
  /** The first tokens of `client`: a code exchanged over a connection with `cert`. */
  async function firstTokens(client: CreatedClient, cert: TlsPair) {
    const { code, verifier } = await codeOverTls(client);
    const r = await tokenOf(
      client,
      { grant_type: 'authorization_code', code, redirect_uri: CB, code_verifier: verifier },
      cert,
    );
    expect(r.status, r.text).toBe(200);
    return { accessToken: String(r.json.access_token), refreshToken: String(r.json.refresh_token) };
  }
  const refresh = (client: CreatedClient, refreshToken: string, cert: TlsPair | undefined) =>
    tokenOf(client, { grant_type: 'refresh_token', refresh_token: refreshToken }, cert);

  it("binds a public client's refresh token to its certificate: another one is invalid_grant, its own refreshes", async () => {
    const pub = await codeClient({ token_endpoint_auth_method: 'none' });
    const first = await firstTokens(pub, selfA);
    const other = await refresh(pub, first.refreshToken, selfB);
    expect(other.status).toBe(400);
    expect(other.json.error).toBe('invalid_grant');
    expect(String(other.json.error_description)).toMatch(/bound to another TLS client certificate/);
    expect((await introspect(t, first.refreshToken)).cnf).toEqual({ 'x5t#S256': x5t(selfA) });
    // Without a certificate the registration refuses any token request of the client first.
    const none = await refresh(pub, first.refreshToken, undefined);
    expect(none.status).toBe(400);
    expect(none.json.error).toBe('invalid_request');

    // The refusals spent nothing: the certificate it is bound to refreshes, and the new pair is bound again.
    const ok = await refresh(pub, first.refreshToken, selfA);
    expect(ok.status, ok.text).toBe(200);
    expect((await introspect(t, String(ok.json.access_token))).cnf).toEqual({ 'x5t#S256': x5t(selfA) });
    expect((await introspect(t, String(ok.json.refresh_token))).cnf).toEqual({ 'x5t#S256': x5t(selfA) });
  });

  it("the binding is the refresh token's own: with the flag since turned off, a refresh without the certificate is invalid_grant", async () => {
    const pub = await codeClient({ token_endpoint_auth_method: 'none' });
    const first = await firstTokens(pub, selfA);
    await whenNotified(t, 'client', async () => {
      const r = await call(t.adminUrl, 'PATCH', `/admin/clients/${pub.client_id}`, [
        { op: 'replace', path: '/tls_client_certificate_bound_access_tokens', value: false },
      ]);
      expect(r.status).toBe(200);
    });
    const none = await refresh(pub, first.refreshToken, undefined);
    expect(none.status).toBe(400);
    expect(none.json.error).toBe('invalid_grant');
    expect(String(none.json.error_description)).toMatch(/certificate-bound/);
    expect((await refresh(pub, first.refreshToken, selfB)).json.error).toBe('invalid_grant');
    const ok = await refresh(pub, first.refreshToken, selfA);
    expect(ok.status, ok.text).toBe(200);
  });

  it("leaves a confidential client's refresh token unbound (its authentication binds it, §7.1): a renewed certificate refreshes", async () => {
    const confidential = await codeClient({ token_endpoint_auth_method: 'client_secret_basic' });
    const first = await firstTokens(confidential, selfA);
    expect((await introspect(t, first.accessToken)).cnf).toEqual({ 'x5t#S256': x5t(selfA) });
    expect((await introspect(t, first.refreshToken)).cnf).toBeUndefined();
    const renewed = await refresh(confidential, first.refreshToken, selfB);
    expect(renewed.status, renewed.text).toBe(200);
    expect((await introspect(t, String(renewed.json.access_token))).cnf).toEqual({ 'x5t#S256': x5t(selfB) });
  });
});

describe('discovery and client metadata', () => {
  it('advertises the methods and bound tokens on a TLS listener', async () => {
    const r = await tlsRequest(`${t.publicUrl}/.well-known/openid-configuration`);
    expect(r.json.tls_client_certificate_bound_access_tokens).toBe(true);
    expect(r.json.token_endpoint_auth_methods_supported).toEqual([
      'client_secret_post',
      'client_secret_basic',
      'private_key_jwt',
      'none',
      'tls_client_auth',
      'self_signed_tls_client_auth',
    ]);
    expect(r.json.mtls_endpoint_aliases).toBeUndefined();
  });

  it('shows the fields only when set', async () => {
    const c = await mtlsClient({
      tls_client_auth_san_ip: '10.0.0.1',
      tls_client_certificate_bound_access_tokens: true,
    });
    const shown = (await (await fetch(`${t.adminUrl}/admin/clients/${c.client_id}`)).json()) as Record<string, unknown>;
    expect(shown.token_endpoint_auth_method).toBe('tls_client_auth');
    expect(shown.tls_client_auth_san_ip).toBe('10.0.0.1');
    expect(shown.tls_client_certificate_bound_access_tokens).toBe(true);
    expect(shown.tls_client_auth_subject_dn).toBeUndefined();
    const plain = await createClient(t, {});
    const other = (await (await fetch(`${t.adminUrl}/admin/clients/${plain.client_id}`)).json()) as Record<
      string,
      unknown
    >;
    expect(Object.keys(other).filter((k) => k.startsWith('tls_'))).toEqual([]);
  });

  it.each([
    [{ token_endpoint_auth_method: 'tls_client_auth' }, /exactly one of tls_client_auth_subject_dn/],
    [
      {
        token_endpoint_auth_method: 'tls_client_auth',
        tls_client_auth_subject_dn: 'CN=a',
        tls_client_auth_san_dns: 'a.example.com',
      },
      /exactly one of .* got tls_client_auth_subject_dn and tls_client_auth_san_dns/,
    ],
    [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'not a DN' }, /RFC 4514/],
    [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_san_ip: '10.0.0' }, /IPv4 or IPv6/],
    [{ token_endpoint_auth_method: 'client_secret_basic', tls_client_auth_san_dns: 'a.example.com' }, /used only with/],
    [{ token_endpoint_auth_method: 'self_signed_tls_client_auth' }, /either jwks or jwks_uri must be set/],
  ])('refuses %j with invalid_client_metadata', async (body, hint) => {
    const r = await adminCreate(body);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_client_metadata');
    expect(String(r.body.error_description)).toMatch(hint);
  });
});

describe('a TLS-terminating proxy (oauth2.mtls.trusted_proxy)', () => {
  const header = 'X-SSL-Client-Cert';
  /** nginx's `$ssl_client_escaped_cert`. */
  const escaped = (p: TlsPair) => encodeURIComponent(p.cert);
  let trusting: TestServer;
  let distrusting: TestServer;
  let client: CreatedClient;
  beforeAll(async () => {
    const proxy = (addresses: string[]) => ({
      'oauth2.mtls.enabled': true,
      'oauth2.mtls.ca': ca.cert,
      'oauth2.mtls.trusted_proxy.header': header,
      'oauth2.mtls.trusted_proxy.addresses': addresses,
    });
    // Plain HTTP listeners on the same database: the header is the only way a certificate arrives.
    trusting = await startTestServer({ database: t.database, overrides: proxy(['127.0.0.1']) });
    distrusting = await startTestServer({ database: t.database, overrides: proxy(['10.9.9.9/32']) });
    client = await mtlsClient({
      tls_client_auth_subject_dn: 'CN=client-a,O=Acme Corp,C=DE',
      tls_client_certificate_bound_access_tokens: true,
    });
  });
  afterAll(async () => {
    await trusting?.close();
    await distrusting?.close();
  });

  const viaProxy = (server: TestServer, cert: TlsPair | undefined, path = '/oauth2/token', init: RequestInit = {}) =>
    fetch(`${server.publicUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(cert ? { [header]: escaped(cert) } : {}),
        ...(init.headers as Record<string, string>),
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'read', client_id: client.client_id }),
    });

  it('from a trusted address: the forwarded certificate authenticates and binds the token', async () => {
    const r = await viaProxy(trusting, clientA);
    const body = (await r.json()) as Record<string, unknown>;
    expect(r.status, JSON.stringify(body)).toBe(200);
    const at = body.access_token as string;
    expect((await introspect(trusting, at)).cnf).toEqual({ 'x5t#S256': x5t(clientA) });
    const userinfo = (cert: TlsPair) =>
      fetch(`${trusting.publicUrl}/userinfo`, { headers: { authorization: `Bearer ${at}`, [header]: escaped(cert) } });
    expect((await userinfo(clientA)).status).toBe(200);
    const other = await userinfo(clientB);
    expect(other.status).toBe(401);
    expect(other.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    const discovery = (await (await fetch(`${trusting.publicUrl}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(discovery.tls_client_certificate_bound_access_tokens).toBe(true);
  });

  it('from a trusted address: a forwarded certificate counts only if it chains to oauth2.mtls.ca', async () => {
    for (const cert of [forgedSelf, forgedOtherCa]) {
      const r = await viaProxy(trusting, cert);
      expect(r.status).toBe(401);
      expect(((await r.json()) as Record<string, unknown>).error).toBe('invalid_client');
    }
  });

  it('from any other address: the header is ignored', async () => {
    const r = await viaProxy(distrusting, clientA);
    const body = (await r.json()) as Record<string, unknown>;
    expect(r.status).toBe(401);
    expect(body.error).toBe('invalid_client');
    expect(String(body.error_description)).toMatch(/without a TLS client certificate/);
  });
});
