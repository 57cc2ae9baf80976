/**
 * Scheduling of Google Workspace sync (`/api/v1/dsync/cron/sync-google` and the worker's schedule): the sweep and
 * its one-job-per-directory key, overlapping schedules, due directories, deactivated directories,
 * dead jobs, and `gatehouse dsync sync --directory <id>`.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { createDirectory, startDsyncServer, storedEvents, v1 } from '../../helpers/dsync.ts';
import {
  type FakeGoogle,
  googleConfig,
  googleGroup,
  googleMember,
  googleUser,
  startFakeGoogle,
} from '../../helpers/fake-google.ts';

let fake: FakeGoogle;
let s: TestServer;

beforeAll(async () => {
  fake = await startFakeGoogle();
  s = await startDsyncServer(googleConfig(fake));
  const users = [googleUser(1), googleUser(2), googleUser(3)];
  const team = googleGroup('team', 'Team');
  fake.users = users;
  fake.groups = [team];
  fake.members = new Map([[team.id, users.slice(0, 2).map((u) => googleMember(u.id, 'USER', u.primaryEmail))]]);
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const google = () => s.container.dsync.services.google;
const key = (id: string) => `dsync_cloud_sync:${id}`;

async function authorized(input: Record<string, unknown> = {}): Promise<DirectoryRecord> {
  const d = await createDirectory(s, { type: 'google', ...input });
  const ctl = s.container.dsync.controller();
  const t = await ctl.google.getAccessToken({
    directoryId: d.id,
    code: fake.issueCode(`${s.publicUrl}/api/scim/oauth/callback`),
  });
  await ctl.google.setToken({
    directoryId: d.id,
    accessToken: t.data?.access_token as string,
    refreshToken: t.data?.refresh_token as string,
  });
  return d;
}

interface JobRow {
  id: string;
  task: string;
  key: string | null;
  attempts: number;
  max_attempts: number;
  locked: boolean;
  payload: unknown;
}

async function jobs(task?: string): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`
    select j.id, t.identifier task, j.key, j.attempts, j.max_attempts, j.locked_at is not null locked, j.payload
    from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    ${task ? sql`where t.identifier = ${task}` : sql``} order by j.id`.execute(s.container.db);
  return rows;
}

async function lastRun(directoryId: string) {
  const { rows } = await sql<{ status: string; finished_at: Date | null; lease_owner: string | null }>`
    select status, finished_at, lease_owner from dsync_cloud_syncs where directory_id = ${directoryId}`.execute(
    s.container.db,
  );
  return rows[0];
}

describe('the sweep (no worker running yet)', () => {
  it('enqueues one dsync_cloud_sync job per directory, keyed by the directory, however often it runs', async () => {
    const d = await authorized({ product: 'sweep' });
    expect(await google().sweep({ force: true })).toBeGreaterThanOrEqual(1);
    expect(await google().sweep({ force: true })).toBeGreaterThanOrEqual(1);
    const mine = (await jobs('dsync_cloud_sync')).filter((j) => j.key === key(d.id));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ payload: { directoryId: d.id }, max_attempts: 3 });
  });

  it('replaces a dead job of the key instead of being blocked by it', async () => {
    const d = await authorized({ product: 'dead' });
    await google().sweep({ force: true });
    const [dead] = (await jobs('dsync_cloud_sync')).filter((j) => j.key === key(d.id));
    await sql`select graphile_worker.permanently_fail_jobs(array[${dead?.id}::bigint], 'test')`.execute(s.container.db);
    await google().sweep({ force: true });
    const mine = (await jobs('dsync_cloud_sync')).filter((j) => j.key === key(d.id));
    expect(mine).toHaveLength(1);
    expect(mine[0]?.id).not.toBe(dead?.id);
    expect(mine[0]?.attempts).toBe(0);
  });

  it('leaves out deactivated directories, and one that is not due', async () => {
    const off = await authorized({ product: 'off' });
    await v1(s)('PATCH', `/${off.id}`, { deactivated: true });
    await google().sweep({ force: true });
    expect((await jobs('dsync_cloud_sync')).some((j) => j.key === key(off.id))).toBe(false);
    expect(await google().syncDirectory(off.id)).toMatchObject({
      status: 'skipped',
      reason: 'the directory is deactivated',
    });
  });

  it('POST /api/v1/dsync/cron/sync-google needs the Api-Key and enqueues a forced sweep', async () => {
    expect((await v1(s, null)('POST', '/cron/sync-google')).status).toBe(401);
    const r = await v1(s)('POST', '/cron/sync-google');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ message: 'Sync started' });
    expect((await jobs('dsync_cloud_sync_sweep')).map((j) => j.payload)).toEqual([{ force: true }]);
  });
});

describe('with the worker', () => {
  beforeAll(async () => {
    await s.startWorker({ concurrency: 3 });
    // Everything enqueued so far runs to the end.
    await eventually(async () => (await jobs()).length === 0, 20_000);
  });

  it('two overlapping schedules make one run', async () => {
    const d = await authorized({ product: 'overlap' });
    const token = (await v1(s)('GET', `/${d.id}`)).body.data.google_access_token;
    const mine = (r: { authorization?: string | undefined; path: string }) =>
      r.authorization === `Bearer ${token}` && r.path === '/admin/directory/v1/users';
    const hold = fake.hold(mine);
    try {
      expect((await v1(s)('POST', '/cron/sync-google')).status).toBe(200);
      await hold.reached; // the run is in progress
      // A second schedule fires while it runs: the HTTP trigger and the crontab's sweep.
      expect((await v1(s)('POST', '/cron/sync-google')).status).toBe(200);
      await google().sweep({ force: true });
      await eventually(async () => (await jobs('dsync_cloud_sync_sweep')).length === 0);
      const queued = (await jobs('dsync_cloud_sync')).filter((j) => j.key === key(d.id));
      expect(queued).toHaveLength(1);
      expect(queued[0]?.locked).toBe(true);
      // Nor can anything else start a run of this directory meanwhile.
      expect(await google().syncDirectory(d.id)).toMatchObject({
        status: 'skipped',
        reason: 'a sync of this directory is already running',
      });
      expect(await lastRun(d.id)).toMatchObject({ status: 'running' });
    } finally {
      hold.release();
    }
    await eventually(async () => (await lastRun(d.id))?.status === 'completed');
    await eventually(async () => (await jobs('dsync_cloud_sync')).length === 0);
    expect(fake.requests.filter(mine)).toHaveLength(1);
    const events = (await storedEvents(s, d.id)).map((e) => e.event);
    expect(events).toEqual([
      'user.created',
      'user.created',
      'user.created',
      'group.created',
      'group.user_added',
      'group.user_added',
    ]);
  });

  it('the scheduled sweep only enqueues directories whose last run is older than sync_interval', async () => {
    const synced = await authorized({ product: 'synced' });
    expect((await google().syncDirectory(synced.id)).status).toBe('completed');
    const fresh = await authorized({ product: 'fresh' });
    const hold = fake.hold(() => true);
    try {
      await google().sweep();
      const keys = (await jobs('dsync_cloud_sync')).map((j) => j.key);
      expect(keys).toContain(key(fresh.id));
      expect(keys).not.toContain(key(synced.id));
    } finally {
      hold.release();
    }
    await eventually(async () => (await lastRun(fresh.id))?.status === 'completed');
  });

  it('a directory deactivated during a run stops it after the current page', async () => {
    const d = await authorized({ product: 'stopping' });
    const hold = fake.hold((r) => r.path.endsWith('/members'));
    const running = google().syncDirectory(d.id);
    try {
      await hold.reached;
      await v1(s)('PATCH', `/${d.id}`, { deactivated: true });
    } finally {
      hold.release();
    }
    expect(await running).toMatchObject({ status: 'stopped', reason: 'the directory was deactivated during the sync' });
    expect(await lastRun(d.id)).toMatchObject({ status: 'stopped', lease_owner: null });
    expect((await storedEvents(s, d.id)).map((e) => e.event)).not.toContain('group.user_added');
  });
});

describe('gatehouse dsync sync --directory <id>', () => {
  const env = () => ({
    DSN: s.database.url,
    SECRETS_SYSTEM: TEST_SECRET,
    DSYNC_GOOGLE_CLIENT_ID: fake.clientId,
    DSYNC_GOOGLE_CLIENT_SECRET: fake.clientSecret,
    DSYNC_GOOGLE_AUTH_URL: fake.authUrl,
    DSYNC_GOOGLE_TOKEN_URL: fake.tokenUrl,
    DSYNC_GOOGLE_API_URL: fake.apiUrl,
    DSYNC_DISALLOW_PRIVATE_IP_RANGES: 'false',
  });

  it('runs one sync in-process and prints what it did', async () => {
    const d = await authorized({ product: 'cli' });
    const r = await runCli(['dsync', 'sync', '--directory', d.id], env());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^directory ${d.id}: completed in \\d+\\.\\d s\\n`));
    expect(r.stdout).toContain('users:       3 created, 0 updated, 0 deleted, 0 skipped');
    expect(r.stdout).toContain('groups:      1 created, 0 updated, 0 deleted, 0 skipped');
    expect(r.stdout).toContain('memberships: 2 added, 0 removed');
    expect(r.stdout).toContain('events:      6; Directory API pages: 3');
    expect((await storedEvents(s, d.id)).length).toBe(6);
    const again = await runCli(['dsync', 'sync', '--directory', d.id, '--json'], env());
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ directoryId: d.id, status: 'completed', counts: { events: 0 } });
  });

  it('fails with one clear line for a directory it cannot sync', async () => {
    const scim = await createDirectory(s, { type: 'okta-scim-v2' });
    const r = await runCli(['dsync', 'sync', '--directory', scim.id, '--no-progress'], env());
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: google sync skipped: the directory is not a Google directory\n');
  });
});
