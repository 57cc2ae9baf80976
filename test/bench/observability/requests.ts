/** The token and SCIM requests of the observability cost benchmark (run.ts beside this file). */
import type { BenchRequest, TestServerLike } from './server.ts';

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
