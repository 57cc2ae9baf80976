/**
 * Database outages: the app reaches PostgreSQL through a loopback TCP proxy that the test cuts.
 * While it is cut, every API family answers 503 with Retry-After and a "temporarily unavailable"
 * error in its own wire shape, and /health/ready names the database; once the proxy forwards again,
 * the same process serves normally (no restart).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, databaseUrl, type TestDatabase } from '../../helpers/db.ts';
import { API_KEY, createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import type { JsonBody } from '../../helpers/json.ts';
import { type CreatedClient, codeFlowUrl, createClient } from '../../helpers/oauth2.ts';
import { startReceiver } from '../../helpers/receiver.ts';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.ts';

let s: TestServer;
let real: TestDatabase;
let proxy: TcpProxy;
let client: CreatedClient;
let dir: DirectoryRecord;
let accessToken: string;

beforeAll(async () => {
  real = await createTestDatabase();
  const u = new URL(real.url);
  proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  const viaProxy = new URL(real.url);
  viaProxy.port = String(proxy.port);
  s = await startDsyncServer(
    { 'db.pool.connect_timeout': '500ms' },
    { database: { url: databaseUrl(viaProxy.toString(), real.name), name: real.name, drop: async () => {} } },
  );
  client = await createClient(s, {
    grant_types: ['client_credentials', 'authorization_code'],
    token_endpoint_auth_method: 'client_secret_post',
  });
  dir = await createDirectory(s);
  const t = await fetch(`${s.publicUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret ?? '',
    }).toString(),
  });
  accessToken = ((await t.json()) as { access_token: string }).access_token;
});
afterAll(async () => {
  proxy?.restore();
  await s?.close();
  await proxy?.close();
  await real?.drop();
});

interface Probe {
  name: string;
  send(): Promise<Response>;
  /** The body a 503 must have (the family's shape). */
  shape(body: JsonBody): void;
  /** The status when the database is up. */
  ok: number;
}

const UNAVAILABLE = /temporarily unavailable/i;
const hydraShape = (b: JsonBody) => {
  expect(b.error).toBe('temporarily_unavailable');
  expect(b.error_description).toMatch(UNAVAILABLE);
};
const scimShape = (b: JsonBody) => {
  expect(b.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
  expect(b.status).toBe('503');
  expect(b.detail).toMatch(UNAVAILABLE);
};
const dsyncShape = (b: JsonBody) => {
  expect(Object.keys(b)).toEqual(['error']);
  expect(b.error.message).toMatch(UNAVAILABLE);
};

function probes(): Probe[] {
  const form = (p: Record<string, string>) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(p).toString(),
  });
  const scim = scimClient(s, dir);
  const scimUrl = new URL(dir.scim.endpoint ?? '').pathname;
  return [
    {
      name: 'token (client_credentials)',
      send: () =>
        fetch(
          `${s.publicUrl}/oauth2/token`,
          form({
            grant_type: 'client_credentials',
            client_id: client.client_id,
            client_secret: client.client_secret ?? '',
          }),
        ),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'authorize',
      send: () => fetch(codeFlowUrl(s, client, 'openid'), { redirect: 'manual' }),
      shape: hydraShape,
      ok: 302,
    },
    {
      name: 'introspect',
      send: () => fetch(`${s.adminUrl}/admin/oauth2/introspect`, form({ token: accessToken })),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'revoke',
      send: () =>
        fetch(
          `${s.publicUrl}/oauth2/revoke`,
          form({ token: accessToken, client_id: client.client_id, client_secret: client.client_secret ?? '' }),
        ),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'admin clients list',
      send: () => fetch(`${s.adminUrl}/admin/clients`),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'admin client get',
      send: () => fetch(`${s.adminUrl}/admin/clients/${client.client_id}`),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'jwks',
      send: () => fetch(`${s.publicUrl}/.well-known/jwks.json`),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'SCIM list users',
      send: () => fetch(`${s.publicUrl}${scimUrl}/Users`, { headers: { authorization: `Bearer ${dir.scim.secret}` } }),
      shape: scimShape,
      ok: 200,
    },
    {
      name: 'SCIM create user',
      send: async () => {
        const r = await scim('POST', '/Users', { userName: `u${Date.now()}@example.com` });
        return new Response(JSON.stringify(r.body), { status: r.status, headers: r.headers });
      },
      shape: scimShape,
      ok: 201,
    },
    {
      name: 'dsync v1 get directory',
      send: () => fetch(`${s.adminUrl}/api/v1/dsync/${dir.id}`, { headers: { authorization: `Api-Key ${API_KEY}` } }),
      shape: dsyncShape,
      ok: 200,
    },
    {
      name: 'admin consent sessions',
      send: () => fetch(`${s.adminUrl}/admin/oauth2/auth/sessions/consent?subject=alice`),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'admin trust list',
      send: () => fetch(`${s.adminUrl}/admin/trust/grants/jwt-bearer/issuers`),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'admin key set',
      send: () => fetch(`${s.adminUrl}/admin/keys/hydra.openid.id-token`),
      shape: hydraShape,
      ok: 200,
    },
    {
      name: 'SCIM list groups',
      send: () => fetch(`${s.publicUrl}${scimUrl}/Groups`, { headers: { authorization: `Bearer ${dir.scim.secret}` } }),
      shape: scimShape,
      ok: 200,
    },
    {
      name: 'dsync v1 events',
      send: () =>
        fetch(`${s.adminUrl}/api/v1/dsync/events?directoryId=${dir.id}`, {
          headers: { authorization: `Api-Key ${API_KEY}` },
        }),
      shape: dsyncShape,
      ok: 200,
    },
    {
      name: 'dsync v1 list users',
      send: () =>
        fetch(`${s.adminUrl}/api/v1/dsync/users?directoryId=${dir.id}`, {
          headers: { authorization: `Api-Key ${API_KEY}` },
        }),
      shape: dsyncShape,
      ok: 200,
    },
  ];
}

describe('PostgreSQL unreachable', () => {
  it('every family answers 503 + Retry-After in its own error shape, readiness names the database, and it recovers without a restart', async () => {
    // Up: every probe works through the proxy.
    for (const p of probes()) expect((await p.send()).status, p.name).toBe(p.ok);
    expect(proxy.open).toBeGreaterThan(0);

    proxy.cut();
    for (const p of probes()) {
      const r = await p.send();
      const text = await r.text();
      expect(r.status, `${p.name}: ${text}`).toBe(503);
      expect(r.headers.get('retry-after'), p.name).toMatch(/^\d+$/);
      expect(text, p.name).not.toMatch(/ECONNREFUSED|ECONNRESET|127\.0\.0\.1|Connection terminated|\bat \S+\.ts/);
      p.shape(JSON.parse(text));
    }
    const ready = await fetch(`${s.adminUrl}/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await ready.json()) as { errors: unknown }).errors).toEqual({
      database: expect.stringMatching(/not reachable/),
    });
    const pubReady = await fetch(`${s.publicUrl}/health/ready`);
    expect(pubReady.status).toBe(503);
    expect(await pubReady.json()).toEqual({ errors: { database: 'not ready' } });
    // Liveness does not depend on the database (an orchestrator must not restart the process for it).
    expect((await fetch(`${s.adminUrl}/health/alive`)).status).toBe(200);

    proxy.restore();
    await eventually(async () => (await fetch(`${s.adminUrl}/health/ready`)).status === 200);
    for (const p of probes()) expect((await p.send()).status, `${p.name} after recovery`).toBe(p.ok);
    // A second outage after recovery behaves the same (pooled connections opened after the first are dropped too).
    proxy.cut();
    const again = await fetch(`${s.adminUrl}/admin/clients`);
    expect(again.status).toBe(503);
    proxy.restore();
    await eventually(async () => (await fetch(`${s.adminUrl}/admin/clients`)).status === 200);
  });

  it('a server that accepts connections and never answers costs a request db.pool.connect_timeout, then 503', async () => {
    proxy.hang();
    try {
      const started = Date.now();
      const [admin, scim, dsync] = await Promise.all([
        fetch(`${s.adminUrl}/admin/clients`),
        fetch(`${s.publicUrl}${new URL(dir.scim.endpoint ?? '').pathname}/Users`, {
          headers: { authorization: `Bearer ${dir.scim.secret}` },
        }),
        fetch(`${s.adminUrl}/api/v1/dsync/${dir.id}`, { headers: { authorization: `Api-Key ${API_KEY}` } }),
      ]);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect([admin.status, scim.status, dsync.status]).toEqual([503, 503, 503]);
      hydraShape(await admin.json());
      scimShape(await scim.json());
      dsyncShape(await dsync.json());
      expect((await fetch(`${s.adminUrl}/health/ready`)).status).toBe(503);
    } finally {
      proxy.restore();
    }
    await eventually(async () => (await fetch(`${s.adminUrl}/admin/clients`)).status === 200);
  });

  it('a worker in the same process survives the outage and runs jobs enqueued after it', async () => {
    const receiver = await startReceiver();
    try {
      const d = await createDirectory(s, { tenant: 'worker', webhook_url: receiver.url, webhook_secret: 'whsec' });
      const runner = await s.startWorker({ concurrency: 2, livenessIntervalMs: 200 });
      const scim = scimClient(s, d);
      expect((await scim('POST', '/Users', { userName: 'before@example.com' })).status).toBe(201);
      await eventually(async () => receiver.delivered().length >= 1);
      // The outage lasts until the worker has met it: its LISTEN connection lost and a job fetch
      // begun after the cut (the fetch's connection waits out the outage, liveness.ts gatedPool).
      const met = new Set<string>();
      for (const name of ['pool:listen:error', 'worker:getJob:start'] as const)
        runner.events.on(name, () => met.add(name));
      proxy.cut();
      await eventually(async () => met.size === 2);
      proxy.restore();
      await eventually(async () => (await fetch(`${s.adminUrl}/health/ready`)).status === 200);
      await eventually(async () => (await scim('POST', '/Users', { userName: 'after@example.com' })).status === 201);
      await eventually(
        async () => receiver.delivered().some((r) => JSON.stringify(r.body).includes('after@example.com')),
        15_000,
      );
    } finally {
      proxy.restore();
      await receiver.close();
    }
  });
});
