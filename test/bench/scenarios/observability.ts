/**
 * What observability costs on the token and SCIM paths: the same requests with metrics off and
 * audit off, metrics on, and metrics plus audit rows on. Each runs on its own server (metrics and
 * audit are per-process switches set when the server is built, so this file sorts last and every
 * scenario here names both). Compare the req/s of the three rows of a path with each other.
 */
import type { BenchRequest, Scenario } from '../types.ts';
import type { TestServerLike } from '../server.ts';

const COMMON = { 'oauth2.hashers.pbkdf2.iterations': 1000, 'db.jwk_cache.enabled': true, 'db.jwk_cache.ttl': '10m' };
const MODES = [
  { label: 'metrics off, audit off', overrides: { 'metrics.enabled': false, 'audit.enabled': false } },
  { label: 'metrics on, audit off', overrides: { 'metrics.enabled': true, 'audit.enabled': false } },
  { label: 'metrics on, audit rows on', overrides: { 'metrics.enabled': true, 'audit.enabled': true } },
];

export async function tokenRequest(s: TestServerLike): Promise<BenchRequest[]> {
  const r = await fetch(`${s.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_types: ['client_credentials'], scope: 'read' }),
  });
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
  const check = await fetch(`${s.publicUrl}${req.path}`, { method: 'POST', headers: req.headers, body: req.body });
  if (check.status !== 200) throw new Error(`token endpoint answered ${check.status}`);
  return [req];
}

/** SCIM PUTs that always change the user (two bodies per user), spread over directories without webhooks. */
export async function scimRequests(s: TestServerLike): Promise<BenchRequest[]> {
  const svc = s.container.dsync.services;
  const requests: BenchRequest[] = [];
  const user = (d: number, u: number, family: string) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: `obs-${d}-${u}@example.com`,
    name: { givenName: 'Bench', familyName: family },
    emails: [{ value: `obs-${d}-${u}@example.com`, primary: true }],
    active: true,
  });
  for (let d = 0; d < 8; d++) {
    const dir = await svc.directories.create({ tenant: 'obs', product: `p${d}`, type: 'generic-scim-v2' });
    const path = new URL(dir.scim.endpoint ?? '').pathname;
    for (let u = 0; u < 2; u++) {
      const created = await svc.scim.handle({
        method: 'POST',
        directoryId: dir.id,
        resourceType: 'users',
        apiSecret: dir.scim.secret,
        body: user(d, u, 'A'),
      });
      const id = (created.data as { id: string }).id;
      for (const family of ['B', 'A'])
        requests.push({
          method: 'PUT',
          path: `${path}/Users/${id}`,
          headers: { authorization: `Bearer ${dir.scim.secret}`, 'content-type': 'application/scim+json' },
          body: JSON.stringify(user(d, u, family)),
        });
    }
  }
  return requests;
}

const auditRows = async (s: TestServerLike) => ({
  'audit rows': Number(
    (await s.container.pool.query<{ n: number }>('select count(*)::int as n from audit_events')).rows[0]?.n ?? 0,
  ),
});

export const scenarios: Scenario[] = [
  ...MODES.map(
    (m): Scenario => ({
      name: `observability: POST /oauth2/token client_credentials, ${m.label}`,
      listener: 'public',
      overrides: { ...COMMON, ...m.overrides },
      setup: tokenRequest,
      report: auditRows,
    }),
  ),
  ...MODES.map(
    (m): Scenario => ({
      name: `observability: SCIM PUT /Users, ${m.label}`,
      listener: 'public',
      overrides: m.overrides,
      setup: scimRequests,
      report: auditRows,
    }),
  ),
];
