/**
 * What observability costs on the token and SCIM paths: the same requests with metrics off and
 * audit off, metrics on, and metrics plus audit rows on, each a gatehouse process of its own (no
 * peer). `npm run bench:observability` measures the same on one process, flipping the switches
 * between interleaved rounds (test/bench/observability-cost.ts).
 */
import type { BenchRequest, Scenario } from '../types.ts';

/** The directory-sync API key of the bench processes (test/bench/gatehouse-main.ts). */
export const OBS_API_KEY = 'bench-api-key';

export const OBS_MODES = [
  { label: 'metrics off, audit off', overrides: { 'metrics.enabled': false, 'audit.enabled': false } },
  { label: 'metrics on, audit off', overrides: { 'metrics.enabled': true, 'audit.enabled': false } },
  { label: 'metrics on, audit rows on', overrides: { 'metrics.enabled': true, 'audit.enabled': true } },
];

interface Urls {
  url: string;
  adminUrl: string;
}

/** A client_credentials request (opaque token, client_secret_basic), checked once. */
export async function tokenRequests(p: Urls): Promise<BenchRequest[]> {
  const r = await fetch(`${p.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_types: ['client_credentials'], scope: 'read' }),
  });
  if (r.status !== 201) throw new Error(`client create answered ${r.status}: ${await r.text()}`);
  const c = (await r.json()) as { client_id: string; client_secret: string };
  const req: BenchRequest = {
    method: 'POST',
    path: '/oauth2/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials&scope=read',
  };
  const check = await fetch(`${p.url}${req.path}`, {
    method: 'POST',
    headers: req.headers,
    body: 'grant_type=client_credentials&scope=read',
  });
  if (check.status !== 200) throw new Error(`token endpoint answered ${check.status}: ${await check.text()}`);
  return [req];
}

/** SCIM PUTs that always change the user (two bodies per user) on 8 directories without webhooks. */
export async function scimRequests(p: Urls): Promise<BenchRequest[]> {
  const requests: BenchRequest[] = [];
  const user = (d: number, u: number, family: string) =>
    JSON.stringify({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: `obs-${d}-${u}@example.com`,
      name: { givenName: 'Bench', familyName: family },
      emails: [{ value: `obs-${d}-${u}@example.com`, primary: true }],
      active: true,
    });
  for (let d = 0; d < 8; d++) {
    const r = await fetch(`${p.adminUrl}/api/v1/dsync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Api-Key ${OBS_API_KEY}` },
      body: JSON.stringify({ tenant: 'obs', product: `p${d}`, type: 'okta-scim-v2' }),
    });
    if (r.status !== 201) throw new Error(`directory create answered ${r.status}: ${await r.text()}`);
    const dir = ((await r.json()) as { data: { scim: { endpoint: string; secret: string } } }).data;
    const path = new URL(dir.scim.endpoint).pathname;
    const headers = { authorization: `Bearer ${dir.scim.secret}`, 'content-type': 'application/scim+json' };
    for (let u = 0; u < 2; u++) {
      const created = await fetch(`${p.url}${path}/Users`, { method: 'POST', headers, body: user(d, u, 'A') });
      if (created.status !== 201) throw new Error(`SCIM create answered ${created.status}: ${await created.text()}`);
      const id = ((await created.json()) as { id: string }).id;
      for (const family of ['B', 'A'])
        requests.push({ method: 'PUT', path: `${path}/Users/${id}`, headers, body: user(d, u, family) });
    }
  }
  return requests;
}

export const scenarios: Scenario[] = [
  ...OBS_MODES.map(
    (m): Scenario => ({
      name: `observability: POST /oauth2/token client_credentials, ${m.label}`,
      overrides: m.overrides,
      gatehouse: { url: (p) => p.url, setup: tokenRequests },
    }),
  ),
  ...OBS_MODES.map(
    (m): Scenario => ({
      name: `observability: SCIM PUT /Users, ${m.label}`,
      overrides: m.overrides,
      gatehouse: { url: (p) => p.url, setup: scimRequests },
    }),
  ),
];
