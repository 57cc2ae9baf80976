/**
 * `oauth2.token_hook` (Hydra's token hook) against a loopback receiver: the
 * request body, claims replaced by a 200 (JWT access token `ext`, introspection `ext`, ID token,
 * and the stored session a refresh starts from), 204 no change, 403 `access_denied`, other statuses,
 * a timeout and a refused address `server_error` — for authorization_code, refresh_token,
 * client_credentials and jwt-bearer (whose assertion is the only form value the hook sees).
 */

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import type { JsonBody } from '../../helpers/json.ts';
import {
  authorizeUrl,
  Browser,
  CB,
  createClient,
  exchangeCode,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';
import { codeTokens, introspect, refresh, tokenRequest } from '../../helpers/tokens.ts';

interface HookCall {
  headers: IncomingHttpHeaders;
  body: JsonBody;
}
type Answer = { status: number; body?: unknown } | 'hold';

/** A token hook receiver: records each call and answers with `answer` (mutable per test). */
async function startHookReceiver() {
  const calls: HookCall[] = [];
  const held: Array<() => void> = [];
  const r = {
    url: '',
    calls,
    answer: { status: 204 } as Answer,
    close: () =>
      new Promise<void>((res) => {
        for (const h of held.splice(0)) h();
        server.closeAllConnections();
        server.close(() => res());
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      const a = r.answer;
      if (a === 'hold') {
        held.push(() => res.destroy());
        return;
      }
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body === undefined ? undefined : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token-hook`;
  return r;
}

const CONSENT_CLAIMS = { tenant: 't1' };
const CONSENT_ID_CLAIMS = { nick: 'al' };
const consent = {
  consent: (q: { requested_scope: string[] }) => ({
    grant_scope: q.requested_scope,
    session: { access_token: CONSENT_CLAIMS, id_token: CONSENT_ID_CLAIMS },
  }),
};
const machine = { grant_types: ['client_credentials'], response_types: ['token'], scope: 'read write' };

let t: TestServer;
let hook: Awaited<ReturnType<typeof startHookReceiver>>;
let verify: (jwt: string) => Promise<Record<string, unknown>>;

beforeAll(async () => {
  hook = await startHookReceiver();
  t = await startTestServer({
    overrides: {
      'clients.http.disallow_private_ip_ranges': false,
      'oauth2.token_hook': {
        url: hook.url,
        auth: { type: 'api_key', config: { in: 'header', name: 'X-Hook-Key', value: 'hook-secret' } },
      },
    },
    // a hook that does not answer fails the request quickly
    fetchOptions: { timeoutMs: 1500 },
  });
  const jwks = createLocalJWKSet((await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as never);
  verify = async (jwt) => (await jwtVerify(jwt, jwks)).payload as Record<string, unknown>;
});
afterAll(async () => {
  await t?.close();
  await hook?.close();
});
beforeEach(() => {
  hook.calls.length = 0;
  hook.answer = { status: 204 };
});

/** Runs login and consent and returns the code (not yet exchanged). */
async function codeOf(client: { client_id: string }, scope = 'openid offline'): Promise<string> {
  const r = await runFlow(
    t,
    new Browser(),
    authorizeUrl(t, {
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: CB,
      scope,
      state: randomState(),
    }),
    consent,
  );
  const code = param(r.final, 'code');
  if (!code) throw new Error(`no code at ${r.final}`);
  return code;
}

describe('oauth2.token_hook', () => {
  it('authorization_code: sends the session and request, and a 200 replaces the claims of every token', async () => {
    const client = await createClient(t, { access_token_strategy: 'jwt' });
    hook.answer = {
      status: 200,
      body: { session: { access_token: { tenant: 't2', role: 'admin' }, id_token: { nick: 'hooked' } } },
    };
    const code = await codeOf(client);
    const tok = await exchangeCode(t, client, code);
    expect(tok.status).toBe(200);

    expect(hook.calls).toHaveLength(1);
    const call = hook.calls[0] as HookCall;
    expect(call.headers['content-type']).toMatch(/^application\/json/);
    expect(call.headers['x-hook-key']).toBe('hook-secret');
    expect(call.body).toEqual({
      session: { access_token: CONSENT_CLAIMS, id_token: CONSENT_ID_CLAIMS },
      request: {
        client_id: client.client_id,
        requested_scopes: ['openid', 'offline'],
        granted_scopes: ['openid', 'offline'],
        granted_audience: [],
        grant_types: ['authorization_code'],
        payload: {},
      },
    });
    // No token, code or secret travels to the hook.
    expect(JSON.stringify(call.body)).not.toContain(code);

    const at = await verify(tok.body.access_token as string);
    expect(at.ext).toEqual({ tenant: 't2', role: 'admin' });
    const id = await verify(tok.body.id_token as string);
    expect(id.nick).toBe('hooked');
    expect(id.sub).toBe('alice');
    // The stored session carries the new claims too (introspection of the refresh token).
    const info = await introspect(t, tok.body.refresh_token as string);
    expect(info.body.active).toBe(true);
    expect(info.body.ext).toEqual({ tenant: 't2', role: 'admin' });
  });

  it('204 leaves the claims as consented', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client, 'openid offline', consent);
    expect(hook.calls).toHaveLength(1);
    const info = await introspect(t, tok.access_token as string);
    expect(info.body.ext).toEqual(CONSENT_CLAIMS);
    expect(decodeJwt(tok.id_token as string).nick).toBe('al');
  });

  it('403 is access_denied; the code stays unused and works once the hook allows it', async () => {
    const client = await createClient(t);
    const code = await codeOf(client);
    hook.answer = { status: 403, body: { error: 'nope' } };
    const denied = await exchangeCode(t, client, code);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toBe('access_denied');
    hook.answer = { status: 204 };
    const ok = await exchangeCode(t, client, code);
    expect(ok.status).toBe(200);
  });

  it('refresh_token: the hook sees the stored claims and the grant type; its answer goes into the new tokens', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client, 'openid offline', consent);
    hook.calls.length = 0;
    hook.answer = { status: 200, body: { session: { access_token: { tenant: 't3' }, id_token: { nick: 'r' } } } };
    const r = await refresh(t, client, tok.refresh_token as string);
    expect(r.status).toBe(200);
    expect(hook.calls).toHaveLength(1);
    expect(hook.calls[0]?.body).toMatchObject({
      session: { access_token: CONSENT_CLAIMS, id_token: CONSENT_ID_CLAIMS },
      request: { client_id: client.client_id, grant_types: ['refresh_token'], payload: {} },
    });
    expect((await introspect(t, r.body.access_token)).body.ext).toEqual({ tenant: 't3' });
    expect(decodeJwt(r.body.id_token).nick).toBe('r');
  });

  it('refresh_token: any other status is server_error and the refresh token is not rotated', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client, 'openid offline', consent);
    hook.answer = { status: 500, body: { error: 'boom' } };
    const r = await refresh(t, client, tok.refresh_token as string);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('server_error');
    expect(r.body.error_description).toContain('token hook');
    hook.answer = { status: 204 };
    expect((await refresh(t, client, tok.refresh_token as string)).status).toBe(200);
  });

  it('client_credentials: request shape, claims replaced, 204, 403 and a timeout', async () => {
    const client = await createClient(t, machine);
    hook.answer = { status: 200, body: { session: { access_token: { machine: true } } } };
    const ok = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    expect(ok.status).toBe(200);
    expect(hook.calls[0]?.body).toEqual({
      session: { access_token: {}, id_token: {} },
      request: {
        client_id: client.client_id,
        requested_scopes: ['read'],
        granted_scopes: ['read'],
        granted_audience: [],
        grant_types: ['client_credentials'],
        payload: {},
      },
    });
    expect((await introspect(t, ok.body.access_token)).body.ext).toEqual({ machine: true });

    hook.answer = { status: 204 };
    const same = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    expect(same.status).toBe(200);
    expect((await introspect(t, same.body.access_token)).body.ext).toBeUndefined();

    hook.answer = { status: 403 };
    const denied = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    expect([denied.status, denied.body.error]).toEqual([403, 'access_denied']);

    hook.answer = { status: 200, body: 'not an object' };
    const garbled = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    expect([garbled.status, garbled.body.error]).toEqual([500, 'server_error']);

    hook.answer = 'hold';
    const slow = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    expect([slow.status, slow.body.error]).toEqual([500, 'server_error']);
  });

  it('jwt-bearer: the payload holds the assertion, the grant type is the URN, a 200 replaces the claims', async () => {
    const GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'hook-k1', alg: 'RS256', use: 'sig' };
    const trusted = await fetch(`${t.adminUrl}/admin/trust/grants/jwt-bearer/issuers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        issuer: 'https://idp.example.org',
        subject: 'svc-bob',
        scope: ['read'],
        jwk,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    expect(trusted.status).toBe(201);
    const client = await createClient(t, { grant_types: [GRANT], response_types: ['token'], scope: 'read' });
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({
      iss: 'https://idp.example.org',
      sub: 'svc-bob',
      aud: `${t.publicUrl}/oauth2/token`,
      exp: now + 300,
      iat: now,
      jti: randomUUID(),
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'hook-k1' })
      .sign(privateKey);
    hook.answer = { status: 200, body: { session: { access_token: { via: 'assertion' } } } };
    const r = await tokenRequest(t, client, { grant_type: GRANT, assertion, scope: 'read' });
    expect(r.status).toBe(200);
    expect(hook.calls[0]?.body.request).toEqual({
      client_id: client.client_id,
      requested_scopes: ['read'],
      granted_scopes: ['read'],
      granted_audience: [`${t.publicUrl}/oauth2/token`],
      grant_types: [GRANT],
      payload: { assertion: [assertion] },
    });
    expect((await introspect(t, r.body.access_token)).body).toMatchObject({
      sub: 'svc-bob',
      ext: { via: 'assertion' },
    });
  });
});

describe('oauth2.token_hook with internal addresses refused', () => {
  let guarded: TestServer;
  beforeAll(async () => {
    guarded = await startTestServer({
      overrides: {
        'clients.http.disallow_private_ip_ranges': true,
        'oauth2.token_hook': hook.url,
        'oauth2.expose_internal_errors': true,
      },
    });
  });
  afterAll(() => guarded?.close());

  it('token exchange: the hook sees the exchange grant type, and a 403 refuses the exchange', async () => {
    const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
    const exchanger = await createClient(t, { ...machine, grant_types: ['client_credentials', GRANT] });
    const subject = String(
      (await tokenRequest(t, exchanger, { grant_type: 'client_credentials', scope: 'read' })).body.access_token,
    );
    hook.calls.length = 0;
    const form = {
      grant_type: GRANT,
      subject_token: subject,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    };
    const ok = await tokenRequest(t, exchanger, form);
    expect(ok.status).toBe(200);
    expect(hook.calls).toHaveLength(1);
    const call = hook.calls[0]?.body as { request?: { grant_types?: string[] } } | undefined;
    expect(call?.request?.grant_types).toEqual([GRANT]);
    hook.answer = { status: 403 };
    const denied = await tokenRequest(t, exchanger, form);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toBe('access_denied');
  });

  it('refuses the loopback hook: server_error, no request sent, no address in the answer', async () => {
    const client = await createClient(guarded, machine);
    const r = await tokenRequest(guarded, client, { grant_type: 'client_credentials', scope: 'read' });
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('server_error');
    const text = JSON.stringify(r.body);
    expect(text).not.toContain('127.0.0.1');
    expect(text).not.toMatch(/\d+\.\d+\.\d+\.\d+/);
    expect(hook.calls).toHaveLength(0);
  });
});
