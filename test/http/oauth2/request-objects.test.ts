/** OpenID Connect request objects (`request`, `request_uri`) and client keys served at `jwks_uri`. */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  authorizeUrl,
  Browser,
  CB,
  codeFlowUrl,
  createClient,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';

let t: TestServer;
let files: Server;
let filesUrl = '';
const served = new Map<string, string>();
let keys: Awaited<ReturnType<typeof generateKeyPair>>;
let jwk: Record<string, unknown>;

beforeAll(async () => {
  t = await startTestServer();
  keys = await generateKeyPair('RS256');
  jwk = { ...(await exportJWK(keys.publicKey)), kid: 'rk', use: 'sig', alg: 'RS256' };
  files = createServer((req, res) => {
    const body = served.get(req.url ?? '');
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  const a = files.address();
  filesUrl = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  served.set('/jwks.json', JSON.stringify({ keys: [jwk] }));
});
afterAll(async () => {
  await new Promise((r) => files?.close(r));
  await t?.close();
});

const requestObject = (clientId: string, claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'rk' })
    .setIssuer(clientId)
    .setAudience(t.container.config.urls.self.issuer)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(keys.privateKey);

describe('request objects', () => {
  it('takes parameters from a signed request object passed by value', async () => {
    const client = await createClient(t, { jwks: { keys: [jwk] }, request_object_signing_alg: 'RS256' });
    const state = randomState();
    const request = await requestObject(client.client_id, { state, nonce: 'nonce-from-object', max_age: 600 });
    const r = await runFlow(t, new Browser(), codeFlowUrl(t, client, 'openid', { state: 'state-from-query', request }));
    expect(param(r.final, 'state')).toBe(state);
    expect(param(r.final, 'code')).toMatch(/^ory_ac_/);
  });

  it('fetches a registered request_uri, verifying with keys from the client’s jwks_uri', async () => {
    const location = `${filesUrl}/req-${randomUUID()}`;
    const client = await createClient(t, { jwks_uri: `${filesUrl}/jwks.json`, request_uris: [location] });
    const state = randomState();
    served.set(new URL(location).pathname, await requestObject(client.client_id, { state }));
    const r = await runFlow(t, new Browser(), codeFlowUrl(t, client, 'openid', { request_uri: location }));
    expect(param(r.final, 'state')).toBe(state);
  });

  it('refuses an unregistered request_uri and a request object signed by another key', async () => {
    const client = await createClient(t, { jwks: { keys: [jwk] } });
    const base = {
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid',
      state: randomState(),
    };
    const unregistered = await new Browser().get(authorizeUrl(t, { ...base, request_uri: `${filesUrl}/nope` }));
    expect(param(unregistered.location, 'error')).toBe('invalid_request_uri');
    const other = await generateKeyPair('RS256');
    const forged = await new SignJWT({ state: randomState() })
      .setProtectedHeader({ alg: 'RS256', kid: 'rk' })
      .setExpirationTime('5m')
      .sign(other.privateKey);
    const bad = await new Browser().get(authorizeUrl(t, { ...base, request: forged }));
    expect(param(bad.location, 'error')).toBe('invalid_request_object');
  });
});
