/**
 * Webhook configuration and safety: the address policy (`dsync.disallow_private_ip_ranges`) on
 * webhook URLs when they are set and on every delivery (a name that later resolves inward is
 * refused); the secret and addresses never in logs or job errors; connection lifecycle events to
 * the global webhook; Jackson's environment names.
 */
import type { Runner } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/core/config/load.ts';
import type { Resolver } from '../../../src/core/safe-fetch.ts';
import { eventually, LogCapture, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer, v1 } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver, verifySignature } from '../../helpers/receiver.ts';
import { deadJobs, nudge, outboxCount, scimUser } from '../../helpers/webhooks.ts';

const SECRET = 'whsec-never-in-logs-4711';

describe('address policy (dsync.disallow_private_ip_ranges on)', () => {
  let s: TestServer;
  let rx: Receiver;
  let runner: Runner;
  const logs = new LogCapture();
  // hooks.example resolves to a public address when the URL is set, then inward (DNS rebinding).
  let lookups = 0;
  const resolver: Resolver = async (host) => {
    if (host !== 'hooks.example') throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return lookups++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
  };
  beforeAll(async () => {
    rx = await startReceiver();
    s = await startDsyncServer(
      { 'dsync.disallow_private_ip_ranges': true, 'dsync.webhook.max_attempts': 2 },
      { log: logs.logger('debug'), resolver },
    );
    runner = await s.startWorker();
  });
  afterAll(async () => {
    await runner?.stop();
    await s?.close();
    await rx?.close();
  });

  it('refuses a loopback or private webhook URL when it is set', async () => {
    const api = v1(s);
    for (const url of [rx.url, 'http://localhost/hook', 'http://10.1.2.3/hook', 'http://[::1]:8080/h']) {
      const r = await api('POST', '', { tenant: 'g', product: 'p', webhook_url: url, webhook_secret: SECRET });
      expect(r.status).toBe(400);
      expect(r.body.error.message).toBe(
        'Invalid value for webhook_url: it must not point to a private, loopback or otherwise internal address.',
      );
      expect(JSON.stringify(r.body)).not.toMatch(/10\.1\.2\.3|127\.0\.0\.1|::1/);
    }
    const d = await createDirectory(s, { tenant: 'g', product: 'p' });
    const patched = await api('PATCH', `/${d.id}`, { webhook_url: rx.url, webhook_secret: SECRET });
    expect(patched.status).toBe(400);
  });

  it('refuses at delivery a name that now resolves inward; nothing reaches the receiver, no address or secret is logged', async () => {
    const port = new URL(rx.url).port;
    const d = await createDirectory(s, {
      tenant: 'g',
      product: 'rebind',
      webhook_url: `http://hooks.example:${port}/hook`,
      webhook_secret: SECRET,
      log_webhook_events: true,
    });
    expect(lookups).toBe(1);
    await scimClient(s, d)('POST', '/Users', scimUser('g1'));
    const [dead] = await eventually(async () => {
      await nudge(s);
      const x = await deadJobs(s, 'webhook_deliver');
      return x.length ? x : undefined;
    }, 20_000);
    expect(rx.requests).toHaveLength(0);
    expect(dead?.last_error).toMatch(/refused: its address is not allowed \(loopback\)/);
    expect(dead?.last_error).not.toContain('127.0.0.1');
    expect(await outboxCount(s, d.id)).toBe(1);
    const [log] = (await v1(s)('GET', `/events?directoryId=${d.id}`)).body.data;
    expect(log).toMatchObject({ delivered: false, status_code: 500 });
    expect(log.error).toMatch(/not allowed/);
    const text = logs.lines.join('\n');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('127.0.0.1');
  });
});

describe('connection lifecycle events (global webhook)', () => {
  let s: TestServer;
  let rx: Receiver;
  let runner: Runner;
  beforeAll(async () => {
    rx = await startReceiver();
    s = await startDsyncServer({ 'dsync.webhook_url': rx.url, 'dsync.webhook_secret': 'global-secret' });
    runner = await s.startWorker();
  });
  afterAll(async () => {
    await runner?.stop();
    await s?.close();
    await rx?.close();
  });

  it('sends dsync.created, deactivated, activated and deleted, signed, in order', async () => {
    const d = await createDirectory(s, { tenant: 'life', product: 'p', name: 'Life' });
    await v1(s)('PATCH', `/${d.id}`, { deactivated: true });
    await v1(s)('PATCH', `/${d.id}`, { deactivated: false });
    await v1(s)('PATCH', `/${d.id}`, { name: 'Renamed' }); // no `deactivated`: no event
    await v1(s)('DELETE', `/${d.id}`);
    await eventually(async () => rx.delivered().length === 4);
    const got = rx.delivered().map((r) => r.body);
    expect(got.map((e) => e.event)).toEqual(['dsync.created', 'dsync.deactivated', 'dsync.activated', 'dsync.deleted']);
    expect(got[0]).toMatchObject({
      event: 'dsync.created',
      tenant: 'life',
      product: 'p',
      data: { id: d.id, name: 'Life', type: 'okta-scim-v2' },
    });
    expect(got[3]?.data.name).toBe('Renamed');
    for (const r of rx.delivered()) {
      expect(Object.keys(r.body)).toEqual(['event', 'tenant', 'product', 'data', 'id', 'created_at']);
      expect(verifySignature(r.headers['boxyhq-signature'], r.raw, 'global-secret')).toBe(true);
      expect(verifySignature(r.headers['ory-polis-signature'], r.raw, 'global-secret')).toBe(true);
    }
    // Directory events of this directory went nowhere (it has no webhook of its own).
    expect(got.every((e) => String(e.event).startsWith('dsync.'))).toBe(true);
  });
});

describe('environment names', () => {
  it('reads Jackson’s WEBHOOK_URL / WEBHOOK_SECRET and DSYNC_WEBHOOK_BATCH_* (interval in seconds)', () => {
    const c = loadConfig({
      env: {
        WEBHOOK_URL: 'https://hooks.example.com/dsync',
        WEBHOOK_SECRET: 'g',
        DSYNC_WEBHOOK_BATCH_SIZE: '25',
        DSYNC_WEBHOOK_BATCH_CRON_INTERVAL: '30',
      },
    });
    expect(c.dsync.webhook_url).toBe('https://hooks.example.com/dsync');
    expect(c.dsync.webhook_secret).toBe('g');
    expect(c.dsync.webhook_batch_size).toBe(25);
    expect(c.dsync.webhook_batch_cron_interval).toBe(30_000);
  });
});
