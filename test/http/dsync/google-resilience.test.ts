/**
 * Google Workspace sync when things go wrong: expired and rejected access
 * tokens (refreshed, and the new token stored), a revoked authorization, a failing Directory API in
 * the middle of a sync (what committed stays consistent, the next run completes), and a 403.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { LogCapture, type TestServer } from '../../helpers/apps.ts';
import { snapshot, startDsyncServer, userCount, v1 } from '../../helpers/dsync.ts';
import { type FakeGoogle, googleConfig, googleUser, startFakeGoogle } from '../../helpers/fake-google.ts';
import { googleHarness, summary } from '../../helpers/google-harness.ts';

let fake: FakeGoogle;
let s: TestServer;
const logs = new LogCapture();

beforeAll(async () => {
  fake = await startFakeGoogle();
  s = await startDsyncServer(googleConfig(fake), { log: logs.logger('info') });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const { authorize, authorizedDirectory, workspace, sync, syncFailing } = googleHarness(
  () => s,
  () => fake,
);
const google = () => s.container.dsync.services.google;

describe('access tokens', () => {
  let d: DirectoryRecord;
  const refreshes = () => fake.requests.filter((r) => r.path === '/token' && r.form.grant_type === 'refresh_token');
  const storedToken = async () => (await v1(s)('GET', `/${d.id}`)).body.data.google_access_token as string;
  beforeAll(async () => {
    workspace(3);
    d = await authorizedDirectory({ product: 'tokens' });
    expect((await sync(d.id)).result.status).toBe('completed');
  });

  it('refreshes a token Google rejects (401), retries, and stores the new one', async () => {
    const old = await storedToken();
    const refresh = (await v1(s)('GET', `/${d.id}`)).body.data.google_refresh_token;
    fake.expireAccessTokens();
    const n = refreshes().length;
    const from = fake.requests.length;
    const { result } = await sync(d.id);
    expect(result.status).toBe('completed');
    expect(
      refreshes()
        .slice(n)
        .map((r) => r.form),
    ).toEqual([
      {
        grant_type: 'refresh_token',
        refresh_token: refresh,
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      },
    ]);
    const run = fake.requests.slice(from);
    expect(run[0]?.authorization).toBe(`Bearer ${old}`);
    const fresh = fake.accessTokens.at(-1) as string;
    expect(
      run
        .filter((r) => r.path.startsWith('/admin/'))
        .slice(1)
        .every((r) => r.authorization === `Bearer ${fresh}`),
    ).toBe(true);
    expect(await storedToken()).toBe(fresh);
    // The next run uses the stored token: no refresh.
    const m = refreshes().length;
    await sync(d.id);
    expect(refreshes().length).toBe(m);
  });

  it('refreshes an expired token before using it', async () => {
    const current = await storedToken();
    await google().setToken({
      directoryId: d.id,
      accessToken: current,
      refreshToken: (await v1(s)('GET', `/${d.id}`)).body.data.google_refresh_token,
      expiryDate: Date.now() - 1000,
    });
    const from = fake.requests.length;
    const { result } = await sync(d.id);
    expect(result.status).toBe('completed');
    const run = fake.requests.slice(from);
    expect(run[0]?.path).toBe('/token');
    expect(run[0]?.form.grant_type).toBe('refresh_token');
    expect(run.some((r) => r.authorization === `Bearer ${current}`)).toBe(false);
    expect(await storedToken()).toBe(fake.accessTokens.at(-1));
    const { rows } = await sql<{ exp: Date }>`
      select google_access_token_expires_at exp from dsync_directories where id = ${d.id}`.execute(s.container.db);
    expect(rows[0]?.exp.getTime()).toBeGreaterThan(Date.now() + 3000_000);
  });

  it('ends the run with a clear error when the authorization was revoked; data untouched; works again once re-authorized', async () => {
    fake.users.push(googleUser(77));
    fake.expireAccessTokens();
    fake.revokeRefreshTokens();
    const before = await snapshot(s, d.id);
    const { result, events } = await sync(d.id);
    expect(result.status).toBe('failed');
    expect(result.reason).toBe(
      'Google refused the refresh token (invalid_grant): the authorization was revoked or has expired; authorize the directory again',
    );
    expect(events).toEqual([]);
    expect(await snapshot(s, d.id)).toBe(before);
    const failed = logs.entries().filter((e) => e.directoryId === d.id && e.level === 50);
    expect(failed.at(-1)?.msg).toBe(`google sync failed: ${result.reason}`);
    const { rows } = await sql<{ status: string; error: string; lease_owner: string | null }>`
      select status, error, lease_owner from dsync_cloud_syncs where directory_id = ${d.id}`.execute(s.container.db);
    expect(rows[0]).toEqual({ status: 'failed', error: result.reason, lease_owner: null });

    expect((await authorize(d.id)).google_access_token).toBe(fake.accessTokens.at(-1));
    const next = await sync(d.id);
    expect(next.result.status).toBe('completed');
    expect(summary(next.events)).toEqual([`user.created ${googleUser(77).id}`]);
  });
});

describe('a failing Directory API', () => {
  it('ends the run with a clear error, keeps what committed consistent, and the next run completes', async () => {
    const ws = workspace(450);
    const d = await authorizedDirectory({ product: 'failing' });
    const page2 = Buffer.from('200').toString('base64url');
    const from = fake.requests.length;
    const { result: first, events } = await syncFailing(d.id, (r) =>
      r.path.endsWith('/users') && r.query.pageToken === page2 ? 503 : undefined,
    );
    expect(first.status).toBe('failed');
    expect(first.reason).toBe("Google's Directory API did not answer successfully (HTTP 503)");
    // Three attempts at the failing page, then the run ended: page 1 is stored with its events, nothing deleted.
    expect(fake.requests.slice(from).filter((r) => r.query.pageToken === page2)).toHaveLength(3);
    expect(summary(events)).toEqual(ws.users.slice(0, 200).map((u) => `user.created ${u.id}`));
    expect(await userCount(s, d.id)).toBe(200);

    const next = await sync(d.id);
    expect(next.result.status).toBe('completed');
    expect(summary(next.events)).toEqual([
      ...ws.users.slice(200).map((u) => `user.created ${u.id}`),
      `group.created ${ws.eng.id}`,
      `group.created ${ws.sales.id}`,
      `group.user_added ${ws.eng.id}:${ws.users[0]?.id}`,
      `group.user_added ${ws.eng.id}:${ws.users[1]?.id}`,
      `group.user_added ${ws.sales.id}:${ws.users[0]?.id}`,
    ]);
    expect(await userCount(s, d.id)).toBe(450);
  });

  it('a failure while listing members leaves the users and groups synced; the next run adds the memberships', async () => {
    const ws = workspace(5);
    const d = await authorizedDirectory({ product: 'failing-members' });
    const { result: first, events } = await syncFailing(d.id, (r) =>
      r.path.endsWith(`/groups/${ws.sales.id}/members`) ? 500 : undefined,
    );
    expect(first.status).toBe('failed');
    expect(summary(events).slice(-2)).toEqual([
      `group.user_added ${ws.eng.id}:${ws.users[0]?.id}`,
      `group.user_added ${ws.eng.id}:${ws.users[1]?.id}`,
    ]);
    const next = await sync(d.id);
    expect(summary(next.events)).toEqual([`group.user_added ${ws.sales.id}:${ws.users[0]?.id}`]);
  });

  it('a 403 (not an admin, scopes missing) is reported as such', async () => {
    workspace(2);
    const d = await authorizedDirectory({ product: 'forbidden' });
    const { result } = await syncFailing(d.id, (r) => (r.path.endsWith('/users') ? 403 : undefined));
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(
      /^Google refused access to the directory \(HTTP 403 BACKEND_ERROR\): the authorizing account must be a Workspace administrator/,
    );
  });
});
