/**
 * One base URL, as a Jackson deployment has: `dsync.api.listener` serves `/api/v1/dsync` on the
 * admin listener (default), the public one, or both, with `Authorization: Api-Key` required on
 * each; Jackson's `GET /api/health` probe; SCIM answers in the media type the client asks for.
 */
import { afterAll, describe, expect, it } from 'vitest';
import pkg from '../../../package.json' with { type: 'json' };
import type { TestServer } from '../../helpers/apps.ts';
import { API_KEY, createDirectory, startDsyncServer } from '../../helpers/dsync.ts';

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});
async function server(listener?: 'admin' | 'public' | 'both') {
  const s = await startDsyncServer(listener ? { 'dsync.api.listener': listener } : {});
  servers.push(s);
  return s;
}
const get = (base: string, path: string, key: string | null = API_KEY, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { headers: { ...(key ? { authorization: `Api-Key ${key}` } : {}), ...headers } });

describe('dsync.api.listener', () => {
  it('admin (default): the API is on the admin listener only', async () => {
    const s = await server();
    const d = await createDirectory(s, { tenant: 'one', product: 'p' });
    expect((await get(s.adminUrl, `/api/v1/dsync/${d.id}`)).status).toBe(200);
    expect((await get(s.publicUrl, `/api/v1/dsync/${d.id}`)).status).toBe(404);
  });

  it('public: SCIM, the OAuth callback and the API on one origin, Api-Key required', async () => {
    const s = await server('public');
    const created = await fetch(`${s.publicUrl}/api/v1/dsync`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'one', product: 'p' }),
    });
    expect(created.status).toBe(201);
    const d = ((await created.json()) as { data: { id: string } }).data;
    const r = await get(s.publicUrl, `/api/v1/dsync/${d.id}`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { data: { id: string } }).data.id).toBe(d.id);
    const anonymous = await get(s.publicUrl, `/api/v1/dsync/${d.id}`, null);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: { message: 'Unauthorized' } });
    expect((await get(s.publicUrl, `/api/v1/dsync/${d.id}`, 'wrong-key')).status).toBe(401);
    expect((await get(s.adminUrl, `/api/v1/dsync/${d.id}`)).status).toBe(404);
  });

  it('both: the same API on both listeners', async () => {
    const s = await server('both');
    const d = await createDirectory(s, { tenant: 'one', product: 'p' });
    expect((await get(s.adminUrl, `/api/v1/dsync/${d.id}`)).status).toBe(200);
    expect((await get(s.publicUrl, `/api/v1/dsync/${d.id}`)).status).toBe(200);
    expect((await get(s.publicUrl, `/api/v1/dsync/${d.id}`, null)).status).toBe(401);
  });
});

describe('GET /api/health', () => {
  it('answers Jackson’s { version } on both listeners, without a key', async () => {
    const s = await server();
    for (const base of [s.publicUrl, s.adminUrl]) {
      const r = await get(base, '/api/health', null);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ version: pkg.version });
    }
  });
});

describe('SCIM media type', () => {
  it('answers application/scim+json, or application/json when the client asks for it; reads both', async () => {
    const s = await server();
    const d = await createDirectory(s, { tenant: 'media', product: 'p' });
    const post = (contentType: string, accept?: string, n = 1) =>
      fetch(`${s.publicUrl}/api/scim/v2.0/${d.id}/Users`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${d.scim.secret}`,
          'content-type': contentType,
          ...(accept ? { accept } : {}),
        },
        body: JSON.stringify({ userName: `m${n}@example.com` }),
      });
    const a = await post('application/scim+json', undefined, 1);
    expect(a.status).toBe(201);
    expect(a.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const b = await post('application/json', 'application/json', 2);
    expect(b.status).toBe(201);
    expect(b.headers.get('content-type')).toMatch(/^application\/json/);
    const c = await post('application/json', 'application/scim+json, application/json;q=0.5', 3);
    expect(c.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(((await b.json()) as { userName: string }).userName).toBe('m2@example.com');
  });
});
