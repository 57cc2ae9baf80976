/**
 * Prometheus metrics after a scripted workload: tokens by grant and format, client-authentication
 * failures by method, refresh-token reuse, HTTP requests by route template, SCIM operations by
 * directory type and outcome, webhook deliveries and commit→receipt latency, jobs by task and state
 * (cached between scrapes), database pool gauges; and the worker's own metrics listener.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsServer } from '../../../src/core/observability/metrics.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { type Samples, sample, scrape } from '../../helpers/prometheus.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { codeTokens, refresh, tokenRequest } from '../../helpers/tokens.ts';
import { scimUser } from '../../helpers/webhooks.ts';

let s: TestServer;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  s = await startDsyncServer();
  await s.startWorker({ concurrency: 2 });
});
afterAll(async () => {
  await s?.close();
  await rx?.close();
});

const metricsUrl = () => `${s.adminUrl}/admin/metrics/prometheus`;
const delta = (before: Samples, after: Samples, name: string, labels: Record<string, string> = {}) =>
  sample(after, name, labels) - sample(before, name, labels);

describe('/admin/metrics/prometheus', () => {
  it('is served on the admin listener only, as Prometheus text with process metrics', async () => {
    const r = await scrape(metricsUrl());
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(r.samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(r.samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect((await fetch(`${s.publicUrl}/admin/metrics/prometheus`)).status).toBe(404);
  });

  it('counts the token endpoint: tokens by grant and format, client authentication failures by method, refresh reuse', async () => {
    const before = (await scrape(metricsUrl())).samples;
    const m2m = await createClient(s, {
      grant_types: ['client_credentials'],
      response_types: ['token'],
      scope: 'read',
    });
    const jwt = await createClient(s, {
      grant_types: ['client_credentials'],
      response_types: ['token'],
      scope: 'read',
      access_token_strategy: 'jwt',
    });
    for (let i = 0; i < 3; i++)
      expect((await tokenRequest(s, m2m, { grant_type: 'client_credentials', scope: 'read' })).status).toBe(200);
    expect((await tokenRequest(s, jwt, { grant_type: 'client_credentials', scope: 'read' })).status).toBe(200);
    // Wrong secrets: twice with client_secret_basic, once with client_secret_post.
    const wrong = { ...m2m, client_secret: 'not-the-secret' };
    for (let i = 0; i < 2; i++)
      expect((await tokenRequest(s, wrong, { grant_type: 'client_credentials' })).status).toBe(401);
    const post = await fetch(`${s.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'no-such-client',
        client_secret: 'x',
      }),
    });
    expect(post.status).toBe(401);
    // A code flow, one rotation, then the first refresh token again: reuse.
    const browserClient = await createClient(s);
    const tok = await codeTokens(s, browserClient, 'openid offline');
    expect((await refresh(s, browserClient, tok.refresh_token as string)).status).toBe(200);
    expect((await refresh(s, browserClient, tok.refresh_token as string)).status).toBe(400);

    const after = (await scrape(metricsUrl())).samples;
    const issued = 'gatehouse_oauth2_tokens_issued_total';
    expect(delta(before, after, issued, { grant: 'client_credentials', format: 'opaque' })).toBe(3);
    expect(delta(before, after, issued, { grant: 'client_credentials', format: 'jwt' })).toBe(1);
    expect(delta(before, after, issued, { grant: 'authorization_code', format: 'opaque' })).toBe(1);
    expect(delta(before, after, issued, { grant: 'refresh_token', format: 'opaque' })).toBe(1);
    const failures = 'gatehouse_oauth2_client_authentication_failures_total';
    expect(delta(before, after, failures, { method: 'client_secret_basic' })).toBe(2);
    expect(delta(before, after, failures, { method: 'client_secret_post' })).toBe(1);
    expect(delta(before, after, 'gatehouse_oauth2_refresh_token_reuse_total')).toBe(1);

    // HTTP requests by route template (never the raw path), method and status.
    const http = 'gatehouse_http_requests_total';
    expect(
      delta(before, after, http, { listener: 'public', route: '/oauth2/token', method: 'POST', status: '200' }),
    ).toBe(6);
    expect(
      delta(before, after, http, { listener: 'public', route: '/oauth2/token', method: 'POST', status: '401' }),
    ).toBe(3);
    expect(
      delta(before, after, http, { listener: 'admin', route: '/admin/clients', method: 'POST', status: '201' }),
    ).toBe(3);
    expect(
      delta(before, after, 'gatehouse_http_request_duration_seconds_count', { route: '/oauth2/token', status: '200' }),
    ).toBe(6);
    // No client id ever becomes a label value.
    const text = (await scrape(metricsUrl())).text;
    for (const c of [m2m, jwt, browserClient]) expect(text).not.toContain(c.client_id);
  });

  it('counts SCIM operations by directory type and outcome, webhook deliveries and their commit→receipt latency', async () => {
    const before = (await scrape(metricsUrl())).samples;
    const d = await createDirectory(s, {
      tenant: 'metrics',
      product: 'p',
      type: 'azure-scim-v2',
      webhook_url: rx.url,
      webhook_secret: 'whsec-metrics',
    });
    const scim = scimClient(s, d);
    expect((await scim('POST', '/Users', scimUser('m1'))).status).toBe(201);
    expect((await scim('POST', '/Users', scimUser('m2'))).status).toBe(201);
    expect((await scim('POST', '/Users', scimUser('m1'))).status).toBe(409);
    expect((await scimClient(s, d, 'wrong-secret')('GET', '/Users')).status).toBe(401);
    await eventually(async () => rx.delivered().filter((r) => r.body?.directory_id === d.id).length === 2);
    const after = await eventually(async () => {
      const a = (await scrape(metricsUrl())).samples;
      return delta(before, a, 'gatehouse_webhook_commit_to_receipt_seconds_count') >= 2 ? a : undefined;
    });
    const ops = 'gatehouse_scim_operations_total';
    const azure = { directory_type: 'azure-scim-v2', resource: 'users' };
    expect(delta(before, after, ops, { ...azure, operation: 'POST', outcome: '201' })).toBe(2);
    expect(delta(before, after, ops, { ...azure, operation: 'POST', outcome: '409' })).toBe(1);
    expect(delta(before, after, ops, { ...azure, operation: 'GET', outcome: '401' })).toBe(1);
    expect(delta(before, after, 'gatehouse_webhook_deliveries_total', { outcome: 'delivered' })).toBe(2);
    expect(delta(before, after, 'gatehouse_webhook_commit_to_receipt_seconds_count')).toBe(2);
    expect(delta(before, after, 'gatehouse_webhook_commit_to_receipt_seconds_sum')).toBeGreaterThan(0);
    expect(
      delta(before, after, 'gatehouse_http_requests_total', {
        route: '/api/scim/v2.0/:directoryId/:resourceType',
        method: 'POST',
      }),
    ).toBe(3);
    const text = (await scrape(metricsUrl())).text;
    expect(text).not.toContain(d.id);
    const routes = new Set(after.filter((x) => x.name === 'gatehouse_http_requests_total').map((x) => x.labels.route));
    expect([...routes].every((r) => r === 'unmatched' || r?.startsWith('/'))).toBe(true);
  });

  it('reads job counts by task and state from graphile_worker.jobs, at most once per few seconds', async () => {
    const add = () =>
      sql`select graphile_worker.add_job('audit_purge', '{}'::json, run_at := now() + interval '1 hour')`.execute(
        s.container.db,
      );
    await add();
    // The cache may hold numbers from an earlier scrape: wait until it shows this job.
    const first = await eventually(
      async () => {
        const r = (await scrape(metricsUrl())).samples;
        return sample(r, 'gatehouse_jobs', { task: 'audit_purge', state: 'scheduled' }) === 1 ? r : undefined;
      },
      15_000,
      500,
    );
    expect(first.length).toBeGreaterThan(0);
    await add();
    // Scraped again at once: the cached numbers (no second query within the cache period).
    const cached = (await scrape(metricsUrl())).samples;
    expect(sample(cached, 'gatehouse_jobs', { task: 'audit_purge', state: 'scheduled' })).toBe(1);
    await eventually(
      async () =>
        sample((await scrape(metricsUrl())).samples, 'gatehouse_jobs', { task: 'audit_purge', state: 'scheduled' }) ===
        2,
      15_000,
      500,
    );
  });

  it('reports the database pool and query latency', async () => {
    const r = (await scrape(metricsUrl())).samples;
    expect(sample(r, 'gatehouse_db_pool_max_connections')).toBe(s.container.config.db.pool.max);
    expect(sample(r, 'gatehouse_db_pool_connections')).toBeGreaterThan(0);
    expect(sample(r, 'gatehouse_db_pool_waiting_clients')).toBeGreaterThanOrEqual(0);
    expect(sample(r, 'gatehouse_db_query_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(10);
  });
});

describe('worker metrics listener (worker.metrics.port)', () => {
  it('serves the same registry at /metrics/prometheus and nothing else', async () => {
    const m = await metricsServer(0, '127.0.0.1');
    try {
      const r = await scrape(`http://127.0.0.1:${m.port}/metrics/prometheus`);
      expect(r.status).toBe(200);
      expect(r.text).toContain('# TYPE gatehouse_jobs gauge');
      expect(r.text).toContain('# TYPE gatehouse_webhook_deliveries_total counter');
      expect((await fetch(`http://127.0.0.1:${m.port}/`)).status).toBe(404);
    } finally {
      await m.close();
    }
  });

  it('is off by default', () => {
    expect(s.container.config.worker.metrics.port).toBe(0);
  });
});

describe('metrics.enabled: false', () => {
  it('records nothing but still serves process, pool and job metrics', async () => {
    const off = await startDsyncServer({ 'metrics.enabled': false });
    try {
      const url = `${off.adminUrl}/admin/metrics/prometheus`;
      const before = (await scrape(url)).samples;
      const c = await createClient(off, { grant_types: ['client_credentials'], response_types: ['token'], scope: 'r' });
      expect((await tokenRequest(off, c, { grant_type: 'client_credentials', scope: 'r' })).status).toBe(200);
      const after = (await scrape(url)).samples;
      expect(delta(before, after, 'gatehouse_oauth2_tokens_issued_total')).toBe(0);
      expect(delta(before, after, 'gatehouse_http_requests_total')).toBe(0);
      expect(delta(before, after, 'gatehouse_db_query_duration_seconds_count')).toBe(0);
      expect(sample(after, 'gatehouse_db_pool_max_connections')).toBeGreaterThan(0);
      expect(sample(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    } finally {
      await off.close();
    }
  });
});
