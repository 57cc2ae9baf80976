/**
 * Starting a Google Workspace authorization needs a short-lived authorization link minted through
 * the Api-Key admin API; knowing a directory id is not enough. Tokens of a different Workspace do
 * not replace the connected one unless the operator's link says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealJson } from '../../../src/core/crypto/jwe.ts';
import { keyRing } from '../../../src/core/crypto/keys.ts';
import { DSYNC_KEY_PURPOSES } from '../../../src/dsync/keys.ts';
import { TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type FakeGoogle, googleConfig, googleUser, startFakeGoogle } from '../../helpers/fake-google.ts';
import { getManual as get } from '../../helpers/json.ts';

let fake: FakeGoogle;
let s: TestServer;
const authorizePath = '/api/scim/oauth/authorize';

beforeAll(async () => {
  fake = await startFakeGoogle();
  s = await startDsyncServer(googleConfig(fake));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const mint = (id: string, body?: Record<string, unknown>) =>
  v1(s)('POST', `/${id}/google/authorization-link`, body ?? {});

/** Follows a link through Google's (fake) consent to the callback; returns the callback's answer. */
async function connect(url: string) {
  const start = await get(url);
  expect(start.status).toBe(302);
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const consent = await get(start.headers.get('location') as string);
  return get(consent.headers.get('location') as string, { cookie });
}

const stored = async (id: string) => (await v1(s)('GET', `/${id}`)).body.data;

describe('the authorize route needs an authorization link', () => {
  it('refuses a start with only the directory id (no redirect to Google, no cookie)', async () => {
    const d = await createDirectory(s, { type: 'google' });
    const r = await get(`${s.publicUrl}${authorizePath}?directoryId=${d.id}`);
    expect(r.status).toBe(401);
    expect(r.body.error.message).toContain('A valid authorization link is required');
    expect(r.headers.get('location')).toBeNull();
    expect(r.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a link of another directory, an altered one and an expired one with the same answer', async () => {
    const a = await createDirectory(s, { type: 'google' });
    const b = await createDirectory(s, { type: 'google' });
    const linkA = new URL((await mint(a.id)).body.data.url);
    const token = linkA.searchParams.get('token') as string;
    const expired = await sealJson(
      keyRing([TEST_SECRET], DSYNC_KEY_PURPOSES.links),
      'dsync_google_link',
      { d: a.id },
      1000,
      Date.now() - 60_000,
    );
    const bad = [
      `${s.publicUrl}${authorizePath}?directoryId=${b.id}&token=${token}`,
      `${s.publicUrl}${authorizePath}?directoryId=${a.id}&token=${token.slice(0, -3)}xyz`,
      `${s.publicUrl}${authorizePath}?directoryId=${a.id}&token=${expired}`,
      // an unknown directory gets the same answer as a known one
      `${s.publicUrl}${authorizePath}?directoryId=00000000-0000-4000-8000-000000000000&token=${token}`,
    ];
    const answers = await Promise.all(bad.map((u) => get(u)));
    for (const r of answers) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual(answers[0]?.body);
    }
    expect((await get(linkA.toString())).status).toBe(302);
  });

  it('mints links only through the Api-Key admin API, for Google directories, short-lived', async () => {
    const d = await createDirectory(s, { type: 'google' });
    expect((await v1(s, null)('POST', `/${d.id}/google/authorization-link`)).status).toBe(401);
    expect((await v1(s, 'wrong-key')('POST', `/${d.id}/google/authorization-link`)).status).toBe(401);
    const scim = await createDirectory(s, { type: 'okta-scim-v2' });
    expect((await mint(scim.id)).body).toEqual({
      error: { message: 'Directory is not a Google Directory', code: 400 },
    });
    const r = await mint(d.id);
    expect(r.status).toBe(200);
    const url = new URL(r.body.data.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${s.publicUrl}${authorizePath}`);
    expect(url.searchParams.get('directoryId')).toBe(d.id);
    const ttl = new Date(r.body.data.expires_at).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000);
    expect(r.body.data.replace_workspace).toBe(false);
  });
});

describe('a setup link is a proof too', () => {
  it('starts the authorization of a Google directory of its tenant, and of no other; revoked: refused', async () => {
    const link = (
      await v1(s)('POST', '/setuplinks', {
        tenant: 'setup-tenant',
        product: 'crm',
        webhook_url: 'https://app.example.com/hook',
        webhook_secret: 'x',
      })
    ).body.data;
    const token = link.url.split('/').pop() as string;
    const created = await fetch(`${s.publicUrl}/api/setup/${token}/directory-sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'google' }),
    });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    const one = (
      (await (await fetch(`${s.publicUrl}/api/setup/${token}/directory-sync/${id}`)).json()) as {
        data: { google_authorization_url: string; google_authorized: boolean };
      }
    ).data;
    expect(one.google_authorized).toBe(false);
    const start = await get(one.google_authorization_url);
    expect(start.status).toBe(302);
    expect(new URL(start.headers.get('location') as string).origin).toBe(new URL(fake.authUrl).origin);
    const other = await createDirectory(s, { type: 'google', tenant: 'another-tenant' });
    expect((await get(`${s.publicUrl}${authorizePath}?directoryId=${other.id}&token=${token}`)).status).toBe(401);
    await v1(s)('DELETE', `/setuplinks?id=${link.setupID}`);
    expect((await get(one.google_authorization_url)).status).toBe(401);
  });
});

describe('the connected Workspace', () => {
  it('is not replaced by another Workspace’s tokens unless the link allows it', async () => {
    const d = await createDirectory(s, { type: 'google' });
    fake.users = [googleUser(1, 'acme.test')];
    const first = await connect((await mint(d.id)).body.data.url);
    expect(first.status).toBe(200);
    const before = await stored(d.id);
    expect(before.google_access_token).toBeTruthy();

    // Another Workspace's administrator completes a (leaked) link.
    fake.users = [googleUser(1, 'evil.test', { customerId: 'C0evil999' })];
    const other = await connect((await mint(d.id)).body.data.url);
    expect(other.status).toBe(409);
    expect(other.body.error.message).toContain('not the one connected to the directory');
    const after = await stored(d.id);
    expect(after.google_access_token).toBe(before.google_access_token);
    expect(after.google_refresh_token).toBe(before.google_refresh_token);

    // The same Workspace may authorize again.
    fake.users = [googleUser(2, 'acme.test')];
    expect((await connect((await mint(d.id)).body.data.url)).status).toBe(200);

    // The operator asks for a replacement explicitly.
    fake.users = [googleUser(1, 'evil.test', { customerId: 'C0evil999' })];
    const replaced = await connect((await mint(d.id, { replace_workspace: true })).body.data.url);
    expect(replaced.status).toBe(200);
    expect((await stored(d.id)).google_access_token).not.toBe(before.google_access_token);
  });
});
