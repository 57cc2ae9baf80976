/**
 * Request limits, each answered in the API family's error shape: body size per route family (413),
 * request target length (414), request line + headers (431), operations of one client JSON Patch,
 * and the size of an OpenID Connect request object.
 */
import { connect } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { API_KEY, createDirectory, startDsyncServer } from '../../helpers/dsync.ts';
import { type Answer, expectErrorBody, send } from '../../helpers/fuzz.ts';
import { CB, type CreatedClient, createClient } from '../../helpers/oauth2.ts';

let s: TestServer;
let dir: DirectoryRecord;
let client: CreatedClient;
const LIMITS = {
  'serve.limits.body.public': 20_000,
  'serve.limits.body.admin': 50_000,
  'serve.limits.body.scim': 80_000,
  'serve.limits.url': 4096,
  'serve.limits.headers': 8192,
  'serve.limits.request_object': 2048,
};

beforeAll(async () => {
  s = await startDsyncServer(LIMITS);
  dir = await createDirectory(s);
  const { publicKey } = await generateKeyPair('RS256');
  client = await createClient(s, {
    jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', use: 'sig', alg: 'RS256' }] },
  });
});
afterAll(() => s?.close());

const scimUrl = () => `${s.publicUrl}${new URL(dir.scim.endpoint ?? '').pathname}`;
const scimHeaders = () => ({ authorization: `Bearer ${dir.scim.secret}`, 'content-type': 'application/scim+json' });
const v1Headers = { authorization: `Api-Key ${API_KEY}`, 'content-type': 'application/json' };
const padded = (bytes: number) => JSON.stringify({ userName: 'pad@example.com', pad: 'x'.repeat(bytes) });
const form = (body: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body,
});

describe('body size per route family (413)', () => {
  it('OAuth2 public endpoints take serve.limits.body.public', async () => {
    const under = await send(`${s.publicUrl}/oauth2/token`, form(`grant_type=x&pad=${'a'.repeat(15_000)}`));
    expect(under.status).toBe(400);
    const over = await send(`${s.publicUrl}/oauth2/token`, form(`grant_type=x&pad=${'a'.repeat(25_000)}`));
    expect(over.status).toBe(413);
    expectErrorBody({ ...over, status: 413 }, 'hydra', 'token 413');
    expect(JSON.parse(over.text).error_description).toMatch(/too large/);
  });

  it('SCIM takes serve.limits.body.scim (above the public limit), in the SCIM error shape', async () => {
    const under = await send(`${scimUrl()}/Users`, { method: 'POST', headers: scimHeaders(), body: padded(50_000) });
    expect(under.status).toBe(201);
    const over = await send(`${scimUrl()}/Users`, { method: 'POST', headers: scimHeaders(), body: padded(90_000) });
    expect(over.status).toBe(413);
    expectErrorBody(over, 'scim', 'scim 413');
  });

  it('the admin listener takes serve.limits.body.admin: Hydra admin and directory sync shapes', async () => {
    const big = (n: number) => JSON.stringify({ client_name: 'x'.repeat(n), redirect_uris: [CB] });
    const under = await send(`${s.adminUrl}/admin/clients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big(30_000),
    });
    expect(under.status).toBe(201);
    const over = await send(`${s.adminUrl}/admin/clients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big(60_000),
    });
    expect(over.status).toBe(413);
    expectErrorBody(over, 'hydra', 'admin 413');
    const dsync = await send(`${s.adminUrl}/api/v1/dsync`, {
      method: 'POST',
      headers: v1Headers,
      body: JSON.stringify({ tenant: 't', product: 'p', type: 'okta-scim-v2', name: 'x'.repeat(60_000) }),
    });
    expect(dsync.status).toBe(413);
    expectErrorBody(dsync, 'dsync', 'dsync 413');
  });
});

describe('request target and header size', () => {
  it('a request target over serve.limits.url is 414 in each family’s shape', async () => {
    const long = 'a'.repeat(5000);
    const cases: Array<[string, RequestInit, 'hydra' | 'scim' | 'dsync']> = [
      [`${s.publicUrl}/oauth2/auth?client_id=${long}`, {}, 'hydra'],
      [`${s.adminUrl}/admin/clients?client_name=${long}`, {}, 'hydra'],
      [`${scimUrl()}/Users?filter=${long}`, { headers: scimHeaders() }, 'scim'],
      [`${s.adminUrl}/api/v1/dsync/users?directoryId=${long}`, { headers: v1Headers }, 'dsync'],
    ];
    for (const [url, init, family] of cases) {
      const r = await send(url, init);
      expect(r.status, url.slice(0, 80)).toBe(414);
      expectErrorBody({ ...r, status: 414 }, family, url.slice(0, 80));
    }
    // Just under the limit is served normally.
    const ok = await send(`${s.adminUrl}/admin/clients?client_name=${'a'.repeat(3000)}`);
    expect(ok.status).toBe(200);
  });

  it('a request line plus headers over serve.limits.headers is 431 with a JSON error', async () => {
    for (const base of [s.publicUrl, s.adminUrl]) {
      const r: Answer = await send(`${base}/health/alive`, { headers: { 'x-big': 'b'.repeat(9000) } });
      expect(r.status).toBe(431);
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(JSON.parse(r.text)).toEqual({
        error: 'Request Header Fields Too Large',
        error_description: 'The request line and headers are too large.',
      });
    }
    expect((await send(`${s.publicUrl}/health/alive`, { headers: { 'x-big': 'b'.repeat(6000) } })).status).toBe(200);
  });

  it('a request the HTTP parser cannot read is 400 with a JSON error', async () => {
    const port = Number(new URL(s.publicUrl).port);
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1', () => sock.write('NOT HTTP AT ALL\r\n\r\n'));
      let out = '';
      sock.on('data', (d) => {
        out += d.toString();
      });
      sock.on('end', () => resolve(out));
      sock.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(raw).toContain('Content-Type: application/json');
    expect(raw.split('\r\n\r\n')[1]).toBe(
      JSON.stringify({ error: 'Bad Request', error_description: 'The request could not be parsed.' }),
    );
  });
});

describe('operations and objects', () => {
  it('a client JSON Patch of more than 100 operations is 400 and changes nothing', async () => {
    const ops = Array.from({ length: 101 }, (_, i) => ({ op: 'replace', path: '/client_name', value: `n${i}` }));
    const r = await send(`${s.adminUrl}/admin/clients/${client.client_id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ops),
    });
    expectErrorBody(r, 'hydra', 'patch');
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error_description).toMatch(/more than 100 operations/);
    const got = await send(`${s.adminUrl}/admin/clients/${client.client_id}`);
    expect(JSON.parse(got.text).client_name).toBe('');
    const hundred = ops.slice(0, 100);
    const ok = await send(`${s.adminUrl}/admin/clients/${client.client_id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(hundred),
    });
    expect(ok.status).toBe(200);
  });

  it('a request object over serve.limits.request_object is invalid_request_object', async () => {
    const params = (request: string) =>
      new URLSearchParams({
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: CB,
        scope: 'openid',
        state: 'state-0123456789',
        request,
      });
    const big = `eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.${'e'.repeat(2100)}.c2ln`;
    const r = await send(`${s.publicUrl}/oauth2/auth`, form(params(big).toString()));
    expect(r.status).toBe(302);
    const loc = new URL(r.headers.get('location') ?? '');
    expect(loc.searchParams.get('error')).toBe('invalid_request_object');
    expect(loc.searchParams.get('error_description')).toMatch(/larger than 2048 bytes/);
    // A smaller (still invalid) one gets past the size check to the signature check.
    const small = await send(`${s.publicUrl}/oauth2/auth`, form(params(big.slice(0, 600)).toString()));
    const loc2 = new URL(small.headers.get('location') ?? '');
    expect(loc2.searchParams.get('error_description')).not.toMatch(/larger than/);
  });
});
