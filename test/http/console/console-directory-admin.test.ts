/**
 * The console runs directories: create, edit (webhook, delivery log, Google's chosen groups),
 * deactivate and reactivate, rotate the SCIM secret, clear the delivery log, resend events from a
 * sequence number, the sync health view, and delete — destructive actions after a confirmation,
 * audit events naming the operator. Over HTTP, then the walk in Chromium (axe-core clean).
 */
import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { ARTIFACTS, announceChromium, axeViolations, haveChromium, launchChromium } from '../../helpers/browser.ts';
import { consoleOperator } from '../../helpers/console.ts';
import { scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { outboxCount } from '../../helpers/webhooks.ts';

announceChromium('console directory administration');

const USERS = [{ subject: 'ada@example.com', password: 'gatehouse-dev', claims: { name: 'Ada Lovelace' } }];
const WEBHOOK_SECRET = 'whsec-admin-0123456789';

let s: TestServer;
let runner: Runner | undefined;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  s = await startDsyncServer({
    'dev_ui.enabled': true,
    'dev_ui.users': USERS,
    'console.operators': ['ada@example.com'],
    'audit.enabled': true,
  });
  runner = await s.startWorker({ concurrency: 2 });
});
afterAll(async () => {
  await runner?.stop();
  await s?.close();
  await rx?.close();
});

const operator = () => consoleOperator(s, { csrfOnPost: true });

const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
const auditOf = async (targetId: string) =>
  (
    await sql<{ type: string; actor_kind: string; actor_id: string }>`
      select type, actor_kind, actor_id from audit_events where target_id = ${targetId} order by id`.execute(
      s.container.db,
    )
  ).rows;

describe('directory administration over HTTP', () => {
  it('creates, edits, deactivates and reactivates a directory; the audit trail names the operator', async () => {
    const op = await operator();
    const form = await op.get('/console/directories/new');
    expect(form.res.status).toBe(200);
    for (const label of ['Tenant', 'Product', 'Identity provider', 'Webhook URL']) expect(form.html).toContain(label);

    const bad = await op.post('/console/directories/new', { tenant: 'acme', product: '', type: 'okta-scim-v2' });
    expect(bad.res.status).toBe(400);
    expect(bad.html).toContain('role="alert"');
    expect(bad.html).toContain('value="acme"'); // the form keeps what was typed

    const created = await op.post('/console/directories/new', {
      tenant: 'acme',
      product: 'crm',
      type: 'okta-scim-v2',
      name: 'Acme Okta',
      webhook_url: rx.url,
      webhook_secret: WEBHOOK_SECRET,
    });
    expect(created.res.status).toBe(303);
    const location = created.res.headers.get('location') as string;
    expect(location).toMatch(/^\/console\/directories\/[0-9a-f-]{36}\?done=directory-created$/);
    const id = location.split('/')[3]?.split('?')[0] as string;
    const d = (await v1(s)('GET', `/${id}`)).body.data;
    expect(d).toMatchObject({ tenant: 'acme', product: 'crm', name: 'Acme Okta', webhook: { endpoint: rx.url } });
    expect(text((await op.get(location)).html)).toContain('The directory was created.');

    const saved = await op.post(`/console/directories/${id}/edit`, {
      name: 'Acme (Okta)',
      webhook_url: rx.url,
      webhook_secret: '',
      log_webhook_events: 'yes',
    });
    expect(saved.res.status).toBe(303);
    const after = (await v1(s)('GET', `/${id}`)).body.data;
    expect(after).toMatchObject({ name: 'Acme (Okta)', log_webhook_events: true, webhook: { secret: WEBHOOK_SECRET } });
    expect(
      (await op.post(`/console/directories/${id}/edit`, { name: 'x', webhook_url: 'ftp://nope' })).res.status,
    ).toBe(400);

    // Deactivating asks first; the confirmation deactivates.
    const ask = await op.post(`/console/directories/${id}/status`, { to: 'deactivated' });
    expect(ask.res.status).toBe(200);
    expect(text(ask.html)).toContain('Deactivate the directory Acme (Okta)?');
    expect((await v1(s)('GET', `/${id}`)).body.data.deactivated).toBe(false);
    expect((await op.post(`/console/directories/${id}/status`, { to: 'deactivated', confirm: 'yes' })).res.status).toBe(
      303,
    );
    expect((await v1(s)('GET', `/${id}`)).body.data.deactivated).toBe(true);
    expect((await op.post(`/console/directories/${id}/status`, { to: 'active' })).res.status).toBe(303);
    expect((await v1(s)('GET', `/${id}`)).body.data.deactivated).toBe(false);

    const trail = await auditOf(id);
    expect(trail.map((a) => a.type)).toEqual([
      'dsync.directory.created',
      'dsync.directory.changed',
      'dsync.directory.changed',
      'dsync.directory.changed',
    ]);
    for (const a of trail) expect([a.actor_kind, a.actor_id]).toEqual(['operator', 'ada@example.com']);
  });

  it('rotates the SCIM secret after a confirmation, and shows the new one once', async () => {
    const op = await operator();
    const id = (
      await op.post('/console/directories/new', { tenant: 'rot', product: 'crm', type: 'generic-scim-v2' })
    ).res.headers
      .get('location')
      ?.split('/')[3]
      ?.split('?')[0] as string;
    const before = (await v1(s)('GET', `/${id}`)).body.data;
    const ask = await op.post(`/console/directories/${id}/rotate-secret`, {});
    expect(text(ask.html)).toContain('stops working at once');
    expect((await v1(s)('GET', `/${id}`)).body.data.scim.secret).toBe(before.scim.secret);
    const done = await op.post(`/console/directories/${id}/rotate-secret`, { confirm: 'yes' });
    const now = (await v1(s)('GET', `/${id}`)).body.data;
    expect(now.scim.secret).not.toBe(before.scim.secret);
    expect(done.html).toContain(now.scim.secret);
    expect((await scimClient(s, before)('GET', '/Users')).status).toBe(401);
    expect((await scimClient(s, now)('GET', '/Users')).status).toBe(200);
    expect((await auditOf(id)).at(-1)).toMatchObject({ type: 'dsync.directory.changed', actor_kind: 'operator' });
  });

  it('shows the sync health, resends events from a sequence number, clears the delivery log, and deletes', async () => {
    const op = await operator();
    const location = (
      await op.post('/console/directories/new', {
        tenant: 'health',
        product: 'crm',
        type: 'okta-scim-v2',
        webhook_url: rx.url,
        webhook_secret: WEBHOOK_SECRET,
        log_webhook_events: 'yes',
      })
    ).res.headers.get('location') as string;
    const id = location.split('/')[3]?.split('?')[0] as string;
    const d = (await v1(s)('GET', `/${id}`)).body.data;
    const scim = scimClient(s, d);
    for (let i = 0; i < 3; i++)
      expect((await scim('POST', '/Users', { userName: `h${i}@acme.example` })).status).toBe(201);
    const mine = () => rx.delivered().filter((r) => r.body?.directory_id === id);
    await eventually(async () => mine().length === 3);

    // The page reads its figures side by side: once the three deliveries are marked, every figure says so.
    const health = await eventually(async () => {
      const h = text((await op.get(`/console/directories/${id}/health`)).html);
      return h.includes('median') && h.includes('Waiting for delivery 0') ? h : undefined;
    });
    expect(health).toContain('Events in the last 24 hours 3');
    expect(health).toContain('Waiting for delivery 0');
    expect(health).toMatch(/median \d+ ms, 95th percentile \d+ ms \(3 events\)/);
    expect(health).toContain('Failed delivery jobs none');

    // Resend from seq 2: events 2 and 3 arrive again, in order, with their ids.
    const ask = await op.post(`/console/directories/${id}/events/resend`, { from: '2' });
    expect(text(ask.html)).toContain('from sequence number 2 on');
    expect(mine()).toHaveLength(3);
    const resent = await op.post(`/console/directories/${id}/events/resend`, { from: '2', confirm: 'yes' });
    expect(resent.res.headers.get('location')).toBe(`/console/directories/${id}/health?done=events-resent`);
    // Answered, logged and marked: the sender writes each log row after the answer and marks after that.
    await eventually(async () => mine().length === 5 && (await outboxCount(s, id)) === 0);
    expect(mine().map((r) => r.body.seq)).toEqual([1, 2, 3, 2, 3]);
    expect(mine()[3]?.body.id).toBe(mine()[1]?.body.id);
    expect(
      (await op.post(`/console/directories/${id}/events/resend`, { from: '99', confirm: 'yes' })).res.headers.get(
        'location',
      ),
    ).toBe(`/console/directories/${id}/health?done=events-none`);
    expect((await op.post(`/console/directories/${id}/events/resend`, { from: 'x', confirm: 'yes' })).res.status).toBe(
      400,
    );

    // The delivery log holds the three events; clearing asks first.
    expect((await v1(s)('GET', `/events?directoryId=${id}`)).body.data).toHaveLength(3);
    expect(text((await op.post(`/console/directories/${id}/webhook-logs/clear`, {})).html)).toContain(
      'Clear the delivery log',
    );
    expect((await v1(s)('GET', `/events?directoryId=${id}`)).body.data).toHaveLength(3);
    await op.post(`/console/directories/${id}/webhook-logs/clear`, { confirm: 'yes' });
    expect((await v1(s)('GET', `/events?directoryId=${id}`)).body.data).toEqual([]);

    // Deleting asks first, then the directory and its SCIM endpoint are gone.
    const confirm = await op.post(`/console/directories/${id}/delete`, {});
    expect(text(confirm.html)).toContain('This cannot be undone');
    expect((await v1(s)('GET', `/${id}`)).status).toBe(200);
    const gone = await op.post(`/console/directories/${id}/delete`, { confirm: 'yes' });
    expect(gone.res.headers.get('location')).toBe('/console/directories?done=directory-deleted');
    expect((await v1(s)('GET', `/${id}`)).status).toBe(404);
    expect((await scim('GET', '/Users')).status).toBe(404);
    expect((await auditOf(id)).at(-1)).toMatchObject({ type: 'dsync.directory.deleted', actor_id: 'ada@example.com' });
  });

  it('edits a Google directory’s chosen groups', async () => {
    const op = await operator();
    const location = (
      await op.post('/console/directories/new', {
        tenant: 'g',
        product: 'crm',
        type: 'google',
        google_domain: 'acme.test',
      })
    ).res.headers.get('location') as string;
    const id = location.split('/')[3]?.split('?')[0] as string;
    const form = await op.get(`/console/directories/${id}/edit`);
    expect(form.html).toContain('Groups to sync');
    await op.post(`/console/directories/${id}/edit`, {
      name: 'Google',
      webhook_url: '',
      google_domain: 'acme.test',
      google_groups: 'eng@acme.test\n\n  sales@acme.test  ',
    });
    expect((await v1(s)('GET', `/${id}`)).body.data.google_groups).toEqual(['eng@acme.test', 'sales@acme.test']);
  });

  it('refuses every action without the CSRF token', async () => {
    const op = await operator();
    const id = (await v1(s)('POST', '', { tenant: 'csrf', product: 'crm', type: 'okta-scim-v2' })).body.data.id;
    for (const path of ['status', 'delete', 'rotate-secret', 'webhook-logs/clear', 'events/resend', 'edit']) {
      const res = await fetch(`${s.adminUrl}/console/directories/${id}/${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: '' },
        body: new URLSearchParams({ confirm: 'yes', csrf: 'forged', from: '1', to: 'deactivated' }),
      });
      expect([401, 403], path).toContain(res.status);
    }
    void op;
    expect((await v1(s)('GET', `/${id}`)).body.data.deactivated).toBe(false);
  });
});

describe.skipIf(!haveChromium)('directory administration in Chromium', () => {
  it('an operator creates a directory, reads its health and deletes it by clicking, axe-core clean', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const check = async (name: string) => {
        expect(await axeViolations(page), name).toEqual([]);
        await page.screenshot({ path: `${ARTIFACTS}console-directory-${name}.png`, fullPage: true });
      };
      await page.goto(`${s.adminUrl}/console/directories`);
      await page.getByLabel('User (subject)').fill('ada@example.com');
      await page.getByLabel('Password').fill('gatehouse-dev');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/console/directories');
      await page.getByRole('link', { name: 'New directory' }).click();
      await check('new');
      // Labels carry their hints (`Tenant The customer, e.g. acme.com`): fields by their start.
      await page.getByLabel(/^Tenant/).fill('browser.example');
      await page.getByLabel(/^Product/).fill('crm');
      await page.getByLabel('Identity provider').selectOption('azure-scim-v2');
      await page.getByLabel(/^Name/).fill('Browser Entra');
      await page.getByRole('button', { name: 'Create the directory' }).click();
      await page.waitForURL((u) => /\/console\/directories\/[0-9a-f-]{36}$/.test(u.pathname));
      expect(await page.getByRole('status').textContent()).toContain('The directory was created.');
      await check('created');
      await page.getByRole('link', { name: 'Health' }).click();
      await page.waitForURL((u) => u.pathname.endsWith('/health'));
      await check('health');
      await page.getByRole('link', { name: 'Settings and SCIM' }).click();
      await page.getByRole('button', { name: 'Delete…' }).click();
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Delete');
      await check('delete-confirm');
      await page.getByRole('button', { name: 'Delete the directory' }).click();
      await page.waitForURL((u) => u.pathname === '/console/directories');
      expect(await page.getByRole('status').textContent()).toContain('The directory was deleted');
      expect(await page.getByRole('link', { name: 'Browser Entra' }).count()).toBe(0);
    } finally {
      await browser.close();
    }
  });
});
