/**
 * Setup links: Jackson's `/api/v1/dsync/setuplinks` request and response shapes (compared with
 * Jackson 26.2.0's, test/fixtures/dsync/jackson-setup-links.json), and what a tenant's IT
 * administrator can do with the token alone: configure the tenant's directories, nobody else's;
 * links expire and are revocable (delete, regenerate).
 */
import { readFileSync } from 'node:fs';
import { controllers } from 'gatehouse';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import type { JsonBody } from '../../helpers/json.ts';

const EXTERNAL = 'https://sso.example.com';
const jackson = JSON.parse(
  readFileSync(new URL('../../fixtures/dsync/jackson-setup-links.json', import.meta.url), 'utf8'),
) as {
  create: Record<string, string>;
  errors: Record<string, { message: string; statusCode: number }>;
  filterByProduct: { data: Record<string, string>[] };
};

let s: TestServer;
beforeAll(async () => {
  s = await startDsyncServer({ 'dsync.external_url': EXTERNAL });
});
afterAll(async () => {
  await s?.close();
});

const api = () => v1(s);
/** The tenant administrator's calls: the public listener, no Api-Key. */
async function setup(method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.publicUrl}/api/setup${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as JsonBody };
}
const typesOf = (o: Record<string, unknown>) =>
  Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, typeof o[k]]),
  );
const tokenOf = (url: string) => url.split('/').pop() as string;
const input = (tenant: string) => ({
  tenant,
  product: 'crm',
  name: `${tenant} setup`,
  webhook_url: 'https://app.example.com/hook',
  webhook_secret: 'app-secret',
});

describe('/api/v1/dsync/setuplinks', () => {
  it('creates, reads, lists by product and deletes with Jackson’s shapes', async () => {
    const created = await api()('POST', '/setuplinks', input('acme'));
    expect(created.status).toBe(201);
    const link = created.body.data;
    expect(typesOf(link)).toEqual(jackson.create);
    expect(link).toMatchObject({ tenant: 'acme', product: 'crm', service: 'dsync', name: 'acme setup' });
    expect(link.url).toMatch(new RegExp(`^${EXTERNAL}/setup/[0-9a-f]{48}$`));
    expect(Math.round((link.validTill - Date.now()) / 86_400_000)).toBe(3);
    // Without regenerate the unexpired link comes back unchanged.
    expect((await api()('POST', '/setuplinks', input('acme'))).body.data).toEqual(link);
    expect((await api()('GET', `/setuplinks?id=${link.setupID}`)).body).toEqual({ data: link });
    expect((await api()('GET', '/setuplinks?tenant=acme&product=crm')).body).toEqual({ data: link });
    const byProduct = await api()('GET', '/setuplinks/product?product=crm');
    expect(byProduct.body.data.map((l: { setupID: string }) => l.setupID)).toContain(link.setupID);
    expect(typesOf(byProduct.body.data[0])).toEqual(jackson.filterByProduct.data[0]);
    expect((await api()('DELETE', `/setuplinks?id=${link.setupID}`)).body).toEqual({ data: {} });
    expect((await api()('GET', `/setuplinks?id=${link.setupID}`)).status).toBe(404);
    expect((await v1(s, null)('POST', '/setuplinks', input('acme'))).status).toBe(401);
  });

  it('refuses bad input with Jackson’s messages', async () => {
    const cases: Array<[Record<string, unknown>, keyof typeof jackson.errors]> = [
      [{ ...input('x'), tenant: '' }, 'missingTenant'],
      [{ ...input('a:b') }, 'colon'],
      [{ ...input('x'), webhook_secret: '' }, 'missingWebhook'],
    ];
    for (const [body, key] of cases) {
      const r = await api()('POST', '/setuplinks', body);
      const want = jackson.errors[key] as { message: string; statusCode: number };
      expect(r.status).toBe(want.statusCode);
      expect(r.body.error.message).toBe(want.message);
    }
    expect((await api()('GET', '/setuplinks?id=nope')).body.error.message).toBe(jackson.errors.unknownId?.message);
    expect((await api()('GET', '/setuplinks/product')).status).toBe(400);
  });
});

describe('/api/setup/{token}', () => {
  it('lets the tenant administrator configure the tenant’s directories with the token alone', async () => {
    const link = (await api()('POST', '/setuplinks', input('self'))).body.data;
    const token = tokenOf(link.url);
    const about = await setup('GET', `/${token}`);
    expect(about.status).toBe(200);
    expect(about.body.data).toMatchObject({ product: 'crm', service: 'dsync', name: 'self setup' });
    for (const hidden of ['tenant', 'webhook_url', 'webhook_secret'])
      expect(about.body.data).not.toHaveProperty(hidden);

    expect((await setup('GET', `/${token}/directory-sync`)).body).toEqual({ data: [] });
    const created = await setup('POST', `/${token}/directory-sync`, { type: 'okta-scim-v2' });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body.data)).toEqual(['id']);
    const id = created.body.data.id;
    const one = (await setup('GET', `/${token}/directory-sync/${id}`)).body.data;
    expect(one).toMatchObject({
      id,
      type: 'okta-scim-v2',
      name: 'self setup',
      deactivated: false,
      google_authorized: false,
    });
    expect(one.scim.endpoint).toBe(`${EXTERNAL}/api/scim/v2.0/${id}`);
    // The directory is the application's: its webhook is the link's, and SCIM works with the secret shown.
    const full = (await api()('GET', `/${id}`)).body.data;
    expect(full).toMatchObject({
      tenant: 'self',
      product: 'crm',
      webhook: { endpoint: 'https://app.example.com/hook' },
    });
    const scim = await scimClient(s, full)('POST', '/Users', { userName: 'it@self.example' });
    expect(scim.status).toBe(201);
    expect((await setup('GET', `/${token}/directory-sync`)).body.data).toEqual([
      { id, type: 'okta-scim-v2', name: 'self setup', deactivated: false },
    ]);
    expect((await setup('PATCH', `/${token}/directory-sync/${id}`, { deactivated: true })).body).toEqual({
      data: null,
    });
    expect((await api()('GET', `/${id}`)).body.data.deactivated).toBe(true);
    expect((await setup('DELETE', `/${token}/directory-sync/${id}`)).body).toEqual({ data: null });
    expect((await api()('GET', `/${id}`)).status).toBe(404);
  });

  it('is single-tenant: another tenant’s directory is not found', async () => {
    const link = (await api()('POST', '/setuplinks', input('one-tenant'))).body.data;
    const token = tokenOf(link.url);
    const other = await createDirectory(s, { tenant: 'someone-else', product: 'crm' });
    for (const [method, body] of [['GET'], ['PATCH', { deactivated: true }], ['DELETE']] as const) {
      const r = await setup(method, `/${token}/directory-sync/${other.id}`, body);
      expect(r.status).toBe(404);
      expect(r.body.error.message).toBe('Directory configuration not found.');
    }
    expect((await api()('GET', `/${other.id}`)).body.data.deactivated).toBe(false);
    const verify = s.container.dsync.services.setupLinks.verifyForDirectory;
    expect(await verify(other.id, token)).toBeUndefined();
    const mine = (await setup('POST', `/${token}/directory-sync`, { type: 'google' })).body.data.id;
    expect(await verify(mine, token)).toEqual({ directoryId: mine, replaceWorkspace: false });
    expect(await verify(mine, 'not-a-token')).toBeUndefined();
  });

  it('expires, and is revoked by deletion and by regeneration', async () => {
    const link = (await api()('POST', '/setuplinks', input('expiring'))).body.data;
    const token = tokenOf(link.url);
    expect((await setup('GET', `/${token}`)).status).toBe(200);
    await sql`update dsync_setup_links set valid_till = now() - interval '1 second' where id = ${link.setupID}`.execute(
      s.container.db,
    );
    const expired = await setup('GET', `/${token}/directory-sync`);
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toBe('Setup link is expired');
    // An expired link is replaced by the next create.
    const fresh = (await api()('POST', '/setuplinks', input('expiring'))).body.data;
    expect(fresh.url).not.toBe(link.url);
    const regenerated = (await api()('POST', '/setuplinks', { ...input('expiring'), regenerate: true })).body.data;
    expect(regenerated.url).not.toBe(fresh.url);
    const old = await setup('GET', `/${tokenOf(fresh.url)}`);
    expect(old.status).toBe(404);
    expect(old.body.error.message).toBe(jackson.errors.unknownToken?.message);
    await api()('DELETE', '/setuplinks?tenant=expiring&product=crm');
    expect((await setup('GET', `/${tokenOf(regenerated.url)}`)).status).toBe(404);
    expect(
      await s.container.dsync.services.setupLinks.verifyForDirectory(link.setupID, tokenOf(regenerated.url)),
    ).toBeUndefined();
  });
});

describe('setupLinkController (library)', () => {
  it('has Jackson’s methods, shapes and errors (statusCode and message)', async () => {
    const lib = await controllers({
      externalUrl: EXTERNAL,
      db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET },
    });
    try {
      const c = lib.setupLinkController;
      const link = await c.create({ ...input('lib'), service: 'dsync' });
      expect(typesOf(link as unknown as Record<string, unknown>)).toEqual(jackson.create);
      expect(await c.getByToken(tokenOf(link.url))).toEqual(link);
      expect(await c.get(link.setupID)).toEqual(link);
      const listed = await c.filterBy({ product: 'crm', service: 'dsync' });
      expect(listed.data.map((l) => l.setupID)).toContain(link.setupID);
      expect((await c.filterBy({ tenant: 'lib', product: 'crm', service: 'dsync' })).data).toEqual([link]);
      for (const [call, key] of [
        [() => c.create({ ...input('lib'), tenant: '', service: 'dsync' }), 'missingTenant'],
        [() => c.create({ ...input('lib'), webhook_secret: '', service: 'dsync' }), 'missingWebhook'],
        [() => c.getByToken('nope'), 'unknownToken'],
        [() => c.getByToken(''), 'noToken'],
        [() => c.get(''), 'noId'],
        [() => c.filterBy({}), 'filterNone'],
      ] as const) {
        const want = jackson.errors[key] as { message: string; statusCode: number };
        await expect(call()).rejects.toMatchObject(want);
      }
      await c.remove({ id: link.setupID });
      await expect(c.getByToken(tokenOf(link.url))).rejects.toMatchObject({ statusCode: 404 });
      await expect(c.create({ ...input('lib'), service: 'sso' })).rejects.toMatchObject({ statusCode: 400 });
    } finally {
      await lib.close();
    }
  });
});
