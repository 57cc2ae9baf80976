import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedAddress } from '../../../src/core/safe-fetch.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { selfSigned, startHttpsServer } from '../../helpers/tls.ts';

const IP = /\b\d{1,3}(\.\d{1,3}){3}\b|::/;

/** Names that resolve inward (10/8, loopback, metadata) and one public name, through the resolver seam. */
const DNS: Record<string, ResolvedAddress[]> = {
  'jwks.internal.example': [{ address: '10.0.0.5', family: 4 }],
  'metadata.example': [{ address: '169.254.169.254', family: 4 }],
  'sector.example.test': [{ address: '127.0.0.1', family: 4 }],
  'public.example': [{ address: '93.184.216.34', family: 4 }],
};
const resolver = async (h: string) => {
  const a = DNS[h];
  if (!a) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return a;
};

const post = (s: TestServer, body: unknown) =>
  fetch(`${s.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('client metadata: address policy (clients.http.disallow_private_ip_ranges)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ overrides: { 'clients.http.disallow_private_ip_ranges': true }, resolver });
  });
  afterAll(async () => s?.close());

  it.each([
    ['jwks_uri', { jwks_uri: 'https://jwks.internal.example/keys' }],
    ['backchannel_logout_uri', { backchannel_logout_uri: 'https://metadata.example/logout' }],
    ['request_uris', { request_uris: ['http://127.0.0.1:9/request'] }],
    ['request_uris (IPv6 literal)', { request_uris: ['http://[::1]/request'] }],
  ])('refuses a %s that points inward, without naming the address', async (_f, fields) => {
    const r = await post(s, { redirect_uris: ['https://app.example/cb'], ...fields });
    expect(r.status).toBe(400);
    const body = (await r.json()) as { error: string; error_description: string };
    expect(body.error).toBe('invalid_client_metadata');
    expect(body.error_description).toMatch(/must not point to a private, loopback or otherwise internal address/);
    expect(body.error_description).not.toMatch(IP);
  });

  it('accepts public targets and names that do not resolve yet', async () => {
    const ok = await post(s, {
      jwks_uri: 'https://public.example/keys',
      backchannel_logout_uri: 'https://not-yet.example/logout',
    });
    expect(ok.status).toBe(201);
  });
});

describe('client metadata: sector_identifier_uri is fetched and must list every redirect URI', () => {
  let s: TestServer;
  let sector: Awaited<ReturnType<typeof startHttpsServer>>;
  let answer = '[]';
  beforeAll(async () => {
    const pair = selfSigned('sector.example.test');
    sector = await startHttpsServer(pair, (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(answer);
    });
    s = await startTestServer({ resolver, fetchOptions: { ca: pair.cert } });
  });
  afterAll(async () => {
    await s?.close();
    await sector?.close();
  });

  const url = () => `https://sector.example.test:${sector.port}/sector.json`;

  it('accepts a client whose redirect URIs are all listed', async () => {
    answer = JSON.stringify(['https://a.example/cb', 'https://b.example/cb']);
    const r = await post(s, {
      redirect_uris: ['https://a.example/cb', 'https://b.example/cb'],
      sector_identifier_uri: url(),
    });
    expect(r.status).toBe(201);
  });

  it('refuses a redirect URI missing from the list, and a body that is not an array', async () => {
    answer = JSON.stringify(['https://a.example/cb']);
    const r = await post(s, {
      redirect_uris: ['https://a.example/cb', 'https://c.example/cb'],
      sector_identifier_uri: url(),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error_description: string }).error_description).toMatch(
      /'https:\/\/c\.example\/cb' does not match values of sector_identifier_uri/,
    );
    answer = '{"not":"a list"}';
    const r2 = await post(s, { redirect_uris: ['https://a.example/cb'], sector_identifier_uri: url() });
    expect(r2.status).toBe(400);
    expect(((await r2.json()) as { error_description: string }).error_description).toMatch(/JSON array/);
  });

  it('refuses an unreachable sector_identifier_uri with a clear error', async () => {
    const r = await post(s, {
      redirect_uris: ['https://a.example/cb'],
      sector_identifier_uri: 'https://nowhere.example/sector.json',
    });
    expect(r.status).toBe(400);
    const d = ((await r.json()) as { error_description: string }).error_description;
    expect(d).toMatch(/Unable to read the sector_identifier_uri/);
    expect(d).not.toMatch(IP);
  });
});
