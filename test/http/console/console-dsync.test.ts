/**
 * The console's directory-sync, webhook and job pages, over plain HTTP and in a real headless
 * Chromium (Debian's `chromium` through playwright-core, under the pages' strict CSP) with axe-core
 * checks and screenshots in test-artifacts/: a directory filled by Okta-shaped SCIM requests, its
 * users, groups and members, the SCIM secret behind a CSRF-protected reveal, setup links, and a
 * webhook delivery job that failed for good (`dsync.webhook.max_attempts: 1`) re-enqueued by a
 * click once the receiver works again.
 */
import type { Runner } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFailedJobs } from '../../../src/core/jobs/admin.ts';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { oktaUser } from '../../fixtures/dsync/okta.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { ARTIFACTS, announceChromium, axeViolations, haveChromium, launchChromium } from '../../helpers/browser.ts';
import {
  deadDirectory as deadDirectoryOf,
  failingReceiver as failingReceiverOf,
  type SwitchableReceiver,
  signedInOperator,
} from '../../helpers/console-jobs.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';

announceChromium('console directory-sync');

const USERS = [{ subject: 'ada@example.com', password: 'gatehouse-dev', claims: { name: 'Ada Lovelace' } }];
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const WEBHOOK_SECRET = 'whsec-console-0123456789';

let s: TestServer;
let runner: Runner | undefined;
/** Receivers that answer 503 until `up` is set. */
const receivers: SwitchableReceiver[] = [];
let acme: DirectoryRecord;
let acmeRx: SwitchableReceiver;
const ids: Record<string, string> = {};

const failingReceiver = () => failingReceiverOf(receivers);

/** Okta's provisioning of a user (lookup by userName, then create with a password) and Group Push. */
async function oktaFill(d: DirectoryRecord, people: Array<[string, string, string]>, groupName: string) {
  const scim = scimClient(s, d);
  const created: string[] = [];
  for (const [login, given, family] of people) {
    const look = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent(`userName eq "${login}"`)}&startIndex=1&count=100`,
    );
    expect(look.status).toBe(200);
    expect(look.body.totalResults).toBe(0);
    const r = await scim('POST', '/Users', oktaUser(login, given, family));
    expect(r.status).toBe(201);
    created.push(r.body.id as string);
  }
  const g = await scim('POST', '/Groups', { schemas: [GROUP], displayName: groupName, members: [] });
  expect(g.status).toBe(201);
  const add = await scim('PATCH', `/Groups/${g.body.id}`, {
    schemas: [PATCH_OP],
    Operations: [
      {
        op: 'add',
        path: 'members',
        value: created.map((id, i) => ({ value: id, display: people[i]?.[0] })),
      },
    ],
  });
  expect([200, 204]).toContain(add.status);
  return { users: created, group: g.body.id as string };
}

const failedDeliveries = async (directoryId: string) =>
  listFailedJobs(s.container.db, { task: 'webhook_deliver', queue: `dsync:${directoryId}` });

beforeAll(async () => {
  s = await startDsyncServer({
    'dev_ui.enabled': true,
    'dev_ui.users': USERS,
    'console.operators': ['ada@example.com'],
    // A delivery job fails for good at its first failed attempt.
    'dsync.webhook.max_attempts': 1,
  });
  acmeRx = await failingReceiver();
  acme = await createDirectory(s, {
    name: 'Acme Okta',
    tenant: 'acme',
    product: 'crm',
    type: 'okta-scim-v2',
    webhook_url: acmeRx.url,
    webhook_secret: WEBHOOK_SECRET,
    log_webhook_events: true,
  });
  // Filled before the worker starts: the directory's one delivery job then fails once, for good.
  const filled = await oktaFill(
    acme,
    [
      ['jane.doe@example.com', 'Jane', 'Doe'],
      ['john.roe@example.com', 'John', 'Roe'],
    ],
    'Engineering',
  );
  ids.group = filled.group;
  ids.jane = filled.users[0] as string;
  runner = await s.startWorker();
  await eventually(async () => (await failedDeliveries(acme.id)).length === 1, 20_000);
}, 60_000);

afterAll(async () => {
  await runner?.stop();
  for (const rx of receivers) await rx.close();
  await s?.close();
});

/** An operator signed in over HTTP: GET and POST (form) helpers, and the session's CSRF token. */
const operator = () => signedInOperator(s);

describe('directory pages over HTTP', () => {
  it('lists the directory and shows its users, groups and members from the SCIM requests', async () => {
    const op = await operator();
    const list = await op.get('/console/directories');
    expect(list.res.status).toBe(200);
    expect(list.res.headers.get('content-security-policy')).toMatch(/script-src 'nonce-/);
    expect(list.html).toContain(`<a href="/console/directories/${acme.id}">Acme Okta</a>`);
    const users = await op.get(`/console/directories/${acme.id}/users`);
    expect(users.html).toContain('jane.doe@example.com');
    expect(users.html).toContain('Jane Doe');
    expect(users.html).toContain('John Roe');
    expect(users.html).not.toContain('tlpWENT2m');
    const groups = await op.get(`/console/directories/${acme.id}/groups`);
    expect(groups.html).toContain(`/console/directories/${acme.id}/groups/${ids.group}">Engineering</a>`);
    const members = await op.get(`/console/directories/${acme.id}/groups/${ids.group}`);
    expect(members.res.status).toBe(200);
    expect(members.html).toContain('<dt>Members</dt><dd>2</dd>');
    expect(members.html).toContain('jane.doe@example.com');
    expect(members.html).toContain('john.roe@example.com');
    const user = await op.get(`/console/directories/${acme.id}/users/${ids.jane}`);
    expect(user.html).toContain('00ujane1Okta');
    const events = await op.get(`/console/directories/${acme.id}/events`);
    expect(events.html).toContain('<code>user.created</code>');
    expect(events.html).toContain('<code>group.user_added</code>');
    // Unknown ids are a 404 page, not an error.
    expect((await op.get('/console/directories/not-a-uuid')).res.status).toBe(404);
    expect((await op.get('/console/directories/00000000-0000-4000-8000-000000000000')).res.status).toBe(404);
    expect((await op.get(`/console/directories/${acme.id}/groups/nope`)).res.status).toBe(404);
  });

  it('keeps the SCIM secret out of the page until a CSRF-checked POST reveals it', async () => {
    const op = await operator();
    const page = await op.get(`/console/directories/${acme.id}`);
    expect(page.res.status).toBe(200);
    expect(page.html).toContain(`<code id="scim-endpoint">${acme.scim.endpoint}</code>`);
    expect(page.html).not.toContain(acme.scim.secret);
    expect(page.html).not.toContain(WEBHOOK_SECRET);
    expect(page.html).toContain('Reveal SCIM secret');
    // A cross-site form cannot reveal it: no token, or a wrong one.
    for (const fields of [{ which: 'scim' }, { which: 'scim', csrf: 'forged' }] as Record<string, string>[]) {
      const refused = await op.post(`/console/directories/${acme.id}/reveal`, fields);
      expect(refused.res.status).toBe(403);
      expect(refused.html).toContain('CSRF check failed');
      expect(refused.html).not.toContain(acme.scim.secret);
    }
    const shown = await op.post(`/console/directories/${acme.id}/reveal`, { which: 'scim', csrf: op.csrf });
    expect(shown.res.status).toBe(200);
    expect(shown.res.headers.get('cache-control')).toBe('no-store');
    expect(shown.html).toContain(`<code id="scim-secret">${acme.scim.secret}</code>`);
    expect(shown.html).toContain('data-copy="scim-secret"');
    expect(shown.html).not.toContain(WEBHOOK_SECRET);
    const hook = await op.post(`/console/directories/${acme.id}/reveal`, { which: 'webhook', csrf: op.csrf });
    expect(hook.html).toContain(`<code id="webhook-secret">${WEBHOOK_SECRET}</code>`);
    expect(hook.html).not.toContain(acme.scim.secret);
  });

  it('creates, shows and (after confirmation) deletes a setup link; every form is CSRF-checked', async () => {
    const op = await operator();
    const fields = {
      tenant: 'globex',
      product: 'crm',
      name: 'Globex IT',
      webhook_url: 'https://hooks.example.com/globex',
      webhook_secret: 'whsec-globex',
      expiry_days: '7',
    };
    const forged = await op.post('/console/directories/setup-links', { ...fields, csrf: 'forged' });
    expect(forged.res.status).toBe(403);
    expect((await s.container.dsync.services.setupLinks.byProduct('crm')).data).toHaveLength(0);
    const created = await op.post('/console/directories/setup-links', { ...fields, csrf: op.csrf });
    expect(created.res.status).toBe(200);
    const url = /<code id="setup-link-url">([^<]+)<\/code>/.exec(created.html)?.[1] ?? '';
    expect(url).toMatch(/\/setup\/[0-9a-f]{48}$/);
    const link = await s.container.dsync.services.setupLinks.byTenantAndProduct('globex', 'crm');
    expect(link.url).toBe(url);
    // The list does not show the URL; the reveal (a POST) does.
    const list = await op.get('/console/directories/setup-links');
    expect(list.html).toContain('Globex IT');
    expect(list.html).not.toContain(url);
    const revealPath = `/console/directories/setup-links/${link.setupID}/reveal`;
    expect((await op.post(revealPath, {})).res.status).toBe(403);
    expect((await op.post(revealPath, { csrf: op.csrf })).html).toContain(url);
    // Bad input: the form again with the message, nothing stored.
    const bad = await op.post('/console/directories/setup-links', { ...fields, tenant: 'a:b', csrf: op.csrf });
    expect(bad.res.status).toBe(400);
    expect(bad.html).toContain('tenant cannot contain the character :');
    // Delete: a confirmation page first, then the deletion.
    const delPath = `/console/directories/setup-links/${link.setupID}/delete`;
    expect((await op.post(delPath, { csrf: 'forged', confirm: 'yes' })).res.status).toBe(403);
    const ask = await op.post(delPath, { csrf: op.csrf });
    expect(ask.res.status).toBe(200);
    expect(ask.html).toContain('Delete the setup link of globex/crm?');
    expect(ask.html).toContain('name="confirm" value="yes"');
    expect((await s.container.dsync.services.setupLinks.byProduct('crm')).data).toHaveLength(1);
    const del = await op.post(delPath, { csrf: op.csrf, confirm: 'yes' });
    expect(del.res.status).toBe(303);
    expect(del.res.headers.get('location')).toBe('/console/directories/setup-links?done=link-deleted');
    expect((await s.container.dsync.services.setupLinks.byProduct('crm')).data).toHaveLength(0);
  });
});

describe('webhook and job pages over HTTP', () => {
  /** A directory whose one delivery job has failed for good (one SCIM change, receiver down). */
  const deadDirectory = (tenant: string) =>
    deadDirectoryOf(s, tenant, { receivers, secret: WEBHOOK_SECRET, failed: failedDeliveries });

  it('shows the failed job with its last error and counts; retries it from the jobs page', async () => {
    const { d, rx, job } = await deadDirectory('beta');
    const op = await operator();
    const jobs = await op.get('/console/jobs');
    expect(jobs.res.status).toBe(200);
    const counts = /<tr><td><code>webhook_deliver<\/code><\/td>(.*?)<\/tr>/.exec(jobs.html)?.[1] ?? '';
    // waiting, scheduled, running, failed (Acme's and Beta's jobs are failed), total
    expect(counts).toMatch(/<td>0<\/td><td>0<\/td><td>0<\/td><td><a [^>]+>2<\/a><\/td><td>2<\/td>$/);
    expect(jobs.html).toContain(`<code>dsync:${d.id}</code>`);
    expect(jobs.html).toContain('failed: the webhook endpoint answered 503');
    expect(jobs.html).toContain(`Retry job ${job.id}`);
    const filtered = await op.get('/console/jobs?task=webhook_deliver');
    expect(filtered.html).toContain('Retry every failed webhook_deliver job');
    // Without the token nothing is retried.
    const forged = await op.post('/console/jobs/retry', { id: String(job.id) });
    expect(forged.res.status).toBe(403);
    expect((await failedDeliveries(d.id)).map((j) => j.id)).toEqual([job.id]);
    rx.up = true;
    const ok = await op.post('/console/jobs/retry', { id: String(job.id), csrf: op.csrf });
    expect(ok.res.status).toBe(303);
    expect(ok.res.headers.get('location')).toBe('/console/jobs?done=jobs-retried');
    await eventually(async () => rx.delivered().length === 1, 20_000);
    expect(rx.delivered()[0]?.body.event).toBe('user.created');
    // Nothing left to retry: the page says so.
    const again = await op.post('/console/jobs/retry', { id: String(job.id), csrf: op.csrf });
    expect(again.res.headers.get('location')).toBe('/console/jobs?done=jobs-none');
    expect((await op.get('/console/jobs?done=jobs-none')).html).toContain('No failed job matched');
  }, 60_000);

  it('re-enqueues a failed delivery from the webhooks page; its attempts are in the delivery log', async () => {
    const { d, rx, job } = await deadDirectory('gamma');
    const op = await operator();
    const page = await op.get('/console/webhooks');
    expect(page.html).toContain(`<a href="/console/directories/${d.id}/webhook-logs">gamma directory</a>`);
    expect(page.html).toContain(`Re-enqueue delivery job ${job.id}`);
    for (const path of [
      '/console/webhooks/retry',
      '/console/webhooks/retry-all',
      `/console/directories/${d.id}/webhooks/retry`,
    ]) {
      expect((await op.post(path, { job: String(job.id), csrf: 'forged' })).res.status).toBe(403);
    }
    expect((await failedDeliveries(d.id)).map((j) => j.id)).toEqual([job.id]);
    const logs = await op.get(`/console/directories/${d.id}/webhook-logs`);
    expect(logs.html).toContain('<td>503</td><td><strong>failed</strong></td>');
    // The chart of the last hour counts the attempt (its text alternative says so).
    expect(logs.html).toContain('Per minute over the last hour. Totals: delivered: 0, failed: 1.');
    rx.up = true;
    const ok = await op.post('/console/webhooks/retry', { job: String(job.id), csrf: op.csrf });
    expect(ok.res.status).toBe(303);
    expect(ok.res.headers.get('location')).toBe('/console/webhooks?done=webhook-retried');
    await eventually(async () => rx.delivered().length === 1, 20_000);
    await eventually(async () =>
      (await op.get(`/console/directories/${d.id}/webhook-logs`)).html.includes('delivered</td>'),
    );
  }, 60_000);
});

describe.skipIf(!haveChromium)('directory, webhook and job pages in a real browser (Chromium)', () => {
  it('an operator finds the directory, its members, and re-enqueues the failed delivery by clicking', async () => {
    const browser = await launchChromium();
    try {
      const context = await browser.newContext();
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.adminUrl });
      const page = await context.newPage();
      const cspErrors: string[] = [];
      page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
      });
      const check = async (name: string) => {
        expect(await axeViolations(page), name).toEqual([]);
        await page.screenshot({ path: `${ARTIFACTS}console-${name}.png`, fullPage: true });
      };
      await page.goto(`${s.adminUrl}/console/directories`);
      expect(new URL(page.url()).pathname).toBe('/dev/login');
      await page.getByLabel('User (subject)').fill('ada@example.com');
      await page.getByLabel('Password').fill('gatehouse-dev');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/console/directories');
      expect(await page.getByRole('link', { name: 'Directories' }).first().getAttribute('aria-current')).toBe('page');
      await check('directories');

      await page.getByRole('link', { name: 'Acme Okta' }).click();
      await page.waitForURL((u) => u.pathname === `/console/directories/${acme.id}`);
      expect(await page.locator('#scim-endpoint').textContent()).toBe(acme.scim.endpoint);
      expect(await page.content()).not.toContain(acme.scim.secret);
      await check('directory');
      // Reveal (a POST with the CSRF token), then copy with the button the script shows.
      await page.getByRole('button', { name: 'Reveal SCIM secret' }).click();
      await page.waitForLoadState();
      expect(await page.locator('#scim-secret').textContent()).toBe(acme.scim.secret);
      const copy = page.getByRole('button', { name: 'Copy scim secret' });
      expect(await copy.isVisible()).toBe(true);
      await copy.click();
      const copied = page.locator('button[data-copy="scim-secret"]');
      await eventually(async () => (await copied.textContent()) !== 'Copy scim secret');
      expect(await copied.textContent()).toBe('Copied');
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(acme.scim.secret);
      await check('directory-secret');

      await page.getByRole('link', { name: 'Users', exact: true }).click();
      await page.waitForURL((u) => u.pathname.endsWith('/users'));
      expect(await page.getByRole('row', { name: /Jane Doe/ }).textContent()).toContain('jane.doe@example.com');
      expect(await page.getByRole('link', { name: 'Users', exact: true }).getAttribute('aria-current')).toBe('page');
      await check('directory-users');
      await page.getByRole('link', { name: 'Groups', exact: true }).click();
      await page.getByRole('link', { name: 'Engineering' }).click();
      await page.waitForURL((u) => u.pathname.endsWith(`/groups/${ids.group}`));
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Group Engineering');
      expect(await page.getByRole('cell', { name: 'john.roe@example.com' }).count()).toBe(1);
      expect(await page.getByRole('cell', { name: 'jane.doe@example.com' }).count()).toBe(1);
      await check('group-members');

      // The failed delivery, by keyboard-reachable links and buttons.
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.waitForURL((u) => u.pathname === '/console/webhooks');
      const [job] = await failedDeliveries(acme.id);
      expect(job).toBeDefined();
      const retry = page.getByRole('button', { name: `Re-enqueue delivery job ${job?.id}` });
      expect(await retry.count()).toBe(1);
      expect(
        await page
          .getByRole('row', { name: /Acme Okta/ })
          .first()
          .textContent(),
      ).toContain('the webhook endpoint answered 503');
      await check('webhooks-failed');
      expect(acmeRx.delivered()).toHaveLength(0);
      acmeRx.up = true; // the receiver is fixed
      await retry.focus();
      await page.keyboard.press('Enter');
      await page.waitForURL(
        (u) => u.pathname === '/console/webhooks' && u.searchParams.get('done') === 'webhook-retried',
      );
      expect(await page.getByRole('status').textContent()).toContain('re-enqueued');
      // Every queued event arrives, in order: 2 users, the group, its 2 members.
      await eventually(async () => acmeRx.delivered().length === 5, 20_000);
      expect(acmeRx.delivered().map((r) => r.body.event)).toEqual([
        'user.created',
        'user.created',
        'group.created',
        'group.user_added',
        'group.user_added',
      ]);
      // The job completes (and leaves the list) once it has stepped down.
      await eventually(async () => {
        await page.reload();
        return (await page.getByRole('button', { name: `Re-enqueue delivery job ${job?.id}` }).count()) === 0;
      });
      expect(await page.getByText('No failed deliveries.').count()).toBe(1);
      await check('webhooks-after-retry');

      await page.goto(`${s.adminUrl}/console/directories/${acme.id}/webhook-logs`);
      expect(await page.getByRole('cell', { name: 'delivered', exact: true }).count()).toBe(5);
      expect(await page.getByRole('img', { name: /Delivery attempts/ }).count()).toBe(1);
      expect(await page.locator('#chart-attempts-d').textContent()).toContain('delivered: 5, failed: 1');
      await check('delivery-log');
      await page.getByRole('link', { name: 'Jobs' }).click();
      await page.waitForURL((u) => u.pathname === '/console/jobs');
      expect(await page.getByRole('heading', { name: 'Jobs by task and state' }).count()).toBe(1);
      expect(await page.getByText('No failed jobs.').count()).toBe(1);
      await check('jobs');
      await page.goto(`${s.adminUrl}/console/directories/setup-links`);
      await check('setup-links');
      expect(cspErrors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
