/** The v1 management API for directories (Jackson pages/api/v1/dsync). */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/apps.ts';
import { API_KEY, createDirectory, scimClient, startDsyncServer, userCount, v1 } from '../../helpers/dsync.ts';

let s: TestServer;
let api: ReturnType<typeof v1>;
beforeAll(async () => {
  s = await startDsyncServer({ 'dsync.api_keys': ['other-key-abcdefghijklmnop', API_KEY] });
  api = v1(s);
});
afterAll(async () => {
  await s?.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Api-Key', () => {
  it('refuses a request without Authorization', async () => {
    const r = await v1(s, null)('GET', '?tenant=a&product=b');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: { message: 'Unauthorized' } });
  });

  it('refuses a wrong key, also on routes that do not exist for the method', async () => {
    expect((await v1(s, 'wrong-key')('GET', '?tenant=a&product=b')).status).toBe(401);
    expect((await v1(s, 'wrong-key')('PUT', '/some-id')).status).toBe(401);
    expect((await v1(s, '')('GET', '?tenant=a&product=b')).status).toBe(401);
  });

  it('accepts any configured key, compared on the second token of the header', async () => {
    expect((await v1(s, 'other-key-abcdefghijklmnop')('GET', '?tenant=a&product=b')).status).toBe(200);
    const r = await v1(s, null)('GET', '?tenant=a&product=b', undefined, { authorization: `Bearer ${API_KEY}` });
    expect(r.status).toBe(200);
  });
});

describe('POST /api/v1/dsync', () => {
  it('creates a directory with every parameter and answers 201 with Jackson’s record', async () => {
    const r = await api('POST', '', {
      tenant: 'boxyhq.com',
      product: 'saml-demo',
      name: 'Okta directory',
      type: 'okta-scim-v2',
      webhook_url: 'https://example.com/webhook',
      webhook_secret: 'whsec-1',
    });
    expect(r.status).toBe(201);
    const d = r.body.data;
    expect(Object.keys(d)).toEqual([
      'id',
      'name',
      'tenant',
      'product',
      'type',
      'log_webhook_events',
      'webhook',
      'scim',
      'deactivated',
    ]);
    expect(d.id).toMatch(UUID);
    expect(d).toMatchObject({
      name: 'Okta directory',
      tenant: 'boxyhq.com',
      product: 'saml-demo',
      type: 'okta-scim-v2',
      log_webhook_events: false,
      webhook: { endpoint: 'https://example.com/webhook', secret: 'whsec-1' },
      deactivated: false,
    });
    expect(d.scim.path).toBe(`/api/scim/v2.0/${d.id}`);
    expect(d.scim.secret).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(d.scim.endpoint).toBe(`${s.publicUrl}/api/scim/v2.0/${d.id}`);
  });

  it('defaults the name and the type, and drops a webhook URL given without its secret', async () => {
    const r = await api('POST', '', { tenant: 't1', product: 'p1', webhook_url: 'https://example.com/hook' });
    expect(r.body.data).toMatchObject({
      name: 'scim-t1-p1',
      type: 'generic-scim-v2',
      webhook: { endpoint: '', secret: '' },
    });
  });

  it('gives Entra ID directories the ?aadOptscim062020 suffix', async () => {
    const d = (await api('POST', '', { tenant: 't1', product: 'p1', type: 'azure-scim-v2' })).body.data;
    expect(d.scim.path).toBe(`/api/scim/v2.0/${d.id}/?aadOptscim062020`);
    expect(d.scim.endpoint).toBe(`${s.publicUrl}/api/scim/v2.0/${d.id}/?aadOptscim062020`);
  });

  it('gives cloud directories no SCIM path or secret, and their token fields', async () => {
    const d = (await api('POST', '', { tenant: 't1', product: 'p1', type: 'google' })).body.data;
    expect(d.scim).toEqual({ path: '', secret: '' });
    expect(d).toMatchObject({ google_access_token: '', google_refresh_token: '', deactivated: false });
    expect(d.google_authorization_url).toBe(`${s.publicUrl}/api/scim/oauth/authorize`);
  });

  it.each([
    [{ product: 'p' }, 'Missing required parameters.'],
    [{ tenant: '', product: 'p' }, 'Missing required parameters.'],
    [{ tenant: 't' }, 'Missing required parameters.'],
    [{ tenant: 't', product: 'p', type: 'ldap' }, 'Invalid directory type.'],
    [{ tenant: 'a:b', product: 'p' }, 'tenant cannot contain the character :'],
    [{ tenant: 't', product: 'p:q' }, 'product cannot contain the character :'],
    [
      { tenant: 't', product: 'p', webhook_url: 'ftp://x', webhook_secret: 's' },
      'Invalid value for webhook_url: must be an http(s) URL.',
    ],
  ])('refuses %j with 400', async (body, message) => {
    const r = await api('POST', '', body);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: { message, code: 400 } });
  });

  it('checks the parameters in Jackson’s order (missing before type before the colon)', async () => {
    expect((await api('POST', '', { tenant: 'a:b', type: 'nope' })).body.error.message).toBe(
      'Missing required parameters.',
    );
    expect((await api('POST', '', { tenant: 'a:b', product: 'p', type: 'nope' })).body.error.message).toBe(
      'Invalid directory type.',
    );
  });

  it('stores the SCIM and webhook secrets sealed, not in clear', async () => {
    const d = await createDirectory(s, { webhook_url: 'https://example.com/h', webhook_secret: 'whsec-clear' });
    const { rows } = await sql<{ scim_secret: string; webhook_secret: string }>`
      select scim_secret, webhook_secret from dsync_directories where id = ${d.id}`.execute(s.container.db);
    expect(rows[0]?.scim_secret).not.toContain(d.scim.secret);
    expect(rows[0]?.webhook_secret).not.toContain('whsec-clear');
    expect((await api('GET', `/${d.id}`)).body.data.webhook.secret).toBe('whsec-clear');
  });
});

describe('reads', () => {
  it('lists the directories of a tenant and product, newest first; several per pair are allowed', async () => {
    const a = await createDirectory(s, { tenant: 'two', product: 'dirs' });
    const b = await createDirectory(s, { tenant: 'two', product: 'dirs' });
    const r = await api('GET', '?tenant=two&product=dirs');
    expect(r.status).toBe(200);
    expect(r.body.data.map((d: { id: string }) => d.id)).toEqual([b.id, a.id]);
    expect((await api('GET', '?tenant=nobody&product=dirs')).body).toEqual({ data: [] });
  });

  it('needs both tenant and product', async () => {
    const r = await api('GET', '?tenant=two');
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: { message: 'Please provide tenant and product' } });
  });

  it('gets one directory by id, and 404s an unknown or malformed id', async () => {
    const d = await createDirectory(s);
    expect((await api('GET', `/${d.id}`)).body).toEqual({ data: d });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await api('GET', `/${id}`);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: { message: 'Directory configuration not found.', code: 404 } });
    }
  });

  it('lists a product’s directories with paging, as the whole envelope', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await createDirectory(s, { tenant: `t${i}`, product: 'paged' })).id);
    const all = await api('GET', '/product?product=paged');
    expect(all.body).toEqual({ data: expect.any(Array), error: null });
    expect(all.body.data.map((d: { id: string }) => d.id)).toEqual(ids.reverse());
    const page = await api('GET', '/product?product=paged&pageOffset=1&pageLimit=1');
    expect(page.body.data.map((d: { id: string }) => d.id)).toEqual([ids[1]]);
    expect((await api('GET', '/product')).status).toBe(400);
  });
});

describe('PATCH /api/v1/dsync/{id}', () => {
  it('updates the name, the webhook and the log flag', async () => {
    const d = await createDirectory(s);
    const r = await api('PATCH', `/${d.id}`, {
      name: 'Renamed',
      webhook_url: 'https://example.com/new',
      webhook_secret: 'new-secret',
      log_webhook_events: 'true',
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      name: 'Renamed',
      webhook: { endpoint: 'https://example.com/new', secret: 'new-secret' },
      log_webhook_events: true,
      scim: d.scim,
    });
    const w = await api('PATCH', `/${d.id}`, { webhook: { endpoint: 'https://example.com/obj', secret: 'obj' } });
    expect(w.body.data.webhook).toEqual({ endpoint: 'https://example.com/obj', secret: 'obj' });
  });

  it('deactivates and reactivates ("false" and false both mean false)', async () => {
    const d = await createDirectory(s);
    expect((await api('PATCH', `/${d.id}`, { deactivated: 'yes' })).body.data.deactivated).toBe(true);
    expect((await api('PATCH', `/${d.id}`, { deactivated: 'false' })).body.data.deactivated).toBe(false);
    expect((await api('PATCH', `/${d.id}`, { deactivated: true })).body.data.deactivated).toBe(true);
    expect((await api('PATCH', `/${d.id}`, { deactivated: false })).body.data.deactivated).toBe(false);
  });

  it('does not change tenant, product, type or the SCIM secret', async () => {
    const d = await createDirectory(s);
    const r = await api('PATCH', `/${d.id}`, { tenant: 'x', product: 'y', type: 'google', scim: { secret: 'x' } });
    expect(r.body.data).toEqual(d);
  });

  it('404s an unknown directory (Jackson wrote a broken record and answered 500)', async () => {
    const r = await api('PATCH', '/00000000-0000-4000-8000-000000000001', { name: 'x' });
    expect(r.status).toBe(404);
    expect(r.body.error.message).toBe('Directory configuration not found.');
  });
});

describe('DELETE /api/v1/dsync/{id}', () => {
  it('deletes the directory with its users, and always answers 200 {data:{}}', async () => {
    const d = await createDirectory(s);
    const c = scimClient(s, d);
    expect((await c('POST', '/Users', { userName: 'gone@example.com' })).status).toBe(201);
    expect(await api('DELETE', `/${d.id}`)).toMatchObject({ status: 200, body: { data: {} } });
    expect((await api('GET', `/${d.id}`)).status).toBe(404);
    expect(await userCount(s, d.id)).toBe(0);
    expect(await api('DELETE', `/${d.id}`)).toMatchObject({ status: 200, body: { data: {} } });
  });
});

it('answers an unsupported method with 405, Allow and Jackson’s message', async () => {
  const d = await createDirectory(s);
  const r = await api('PUT', `/${d.id}`, {});
  expect(r.status).toBe(405);
  expect(r.headers.get('allow')).toBe('GET, PATCH, DELETE');
  expect(r.body).toEqual({ error: { message: 'Method PUT not allowed.' } });
  const l = await api('DELETE', '');
  expect(l.status).toBe(405);
  expect(l.headers.get('allow')).toBe('GET, POST');
});
