/**
 * Error isolation across every API family: failing requests of the OAuth2 public endpoints, the
 * Hydra admin API (clients, keys, flows, trust), SCIM and the directory sync API run at once, each
 * carrying its own marker in what it sends. No response may contain another request's marker
 * (errors are built per request, never written onto a shared object).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectoryRecord } from '../../../src/dsync/types.ts';
import type { TestServer } from '../../helpers/apps.ts';
import { API_KEY, createDirectory, startDsyncServer } from '../../helpers/dsync.ts';
import { CB, type CreatedClient, createClient } from '../../helpers/oauth2.ts';

let s: TestServer;
let client: CreatedClient;
let dir: DirectoryRecord;
const N = 8;
// '~' never occurs in base64url, so ids, secrets and signatures cannot contain a marker by chance.
const marker = (i: number) => `m~${i}~`;
const readable = (t: string) => {
  let out = t.replaceAll(/%7E/gi, '~');
  try {
    out = decodeURIComponent(out.replaceAll('+', ' '));
  } catch {
    // keep as is
  }
  return out;
};

beforeAll(async () => {
  s = await startDsyncServer();
  client = await createClient(s, { grant_types: ['client_credentials', 'authorization_code'] });
  dir = await createDirectory(s);
});
afterAll(() => s?.close());

type Seen = { i: number; kind: string; status: number; text: string };
const form = (p: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  body: new URLSearchParams(p).toString(),
});
const json = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const basic = `Basic ${Buffer.from(`${'CLIENT'}:x`).toString('base64')}`;

/** Each kind is a failing request of one family; the marker goes where the server may echo it. */
const KINDS: Record<string, (m: string) => [string, RequestInit]> = {
  'token unsupported grant': (m) => [
    '/oauth2/token',
    form({ grant_type: `grant-${m}`, client_id: client.client_id, client_secret: client.client_secret ?? '' }),
  ],
  'token unknown client': (m) => [
    '/oauth2/token',
    form({ grant_type: 'client_credentials' }, { authorization: basic.replace('CLIENT', '') + m }),
  ],
  'token invalid scope': (m) => [
    '/oauth2/token',
    form({
      grant_type: 'client_credentials',
      scope: `scope-${m}`,
      client_id: client.client_id,
      client_secret: client.client_secret ?? '',
    }),
  ],
  'authorize invalid scope': (m) => [
    `/oauth2/auth?${new URLSearchParams({ client_id: client.client_id, response_type: 'code', redirect_uri: CB, scope: `openid scope-${m}`, state: `state-${m}` })}`,
    { redirect: 'manual' },
  ],
  'authorize unknown redirect': (m) => [
    `/oauth2/auth?${new URLSearchParams({ client_id: client.client_id, response_type: 'code', redirect_uri: `https://evil.example/${m}`, scope: 'openid', state: `state-${m}` })}`,
    { redirect: 'manual' },
  ],
  'userinfo bad token': (m) => ['/userinfo', { headers: { authorization: `Bearer ${m}` } }],
  'admin client bad uri': (m) => [
    'ADMIN/admin/clients',
    json('POST', { redirect_uris: [`https://rp.example/${m}#f`] }),
  ],
  'admin client bad secret method': (m) => [
    'ADMIN/admin/clients',
    json('POST', { token_endpoint_auth_method: `method-${m}` }),
  ],
  'admin key bad alg': (m) => ['ADMIN/admin/keys/set-x', json('POST', { alg: `alg-${m}`, use: 'sig' })],
  'admin flow unknown challenge': (m) => [
    `ADMIN/admin/oauth2/auth/requests/login?login_challenge=${encodeURIComponent(m)}`,
    {},
  ],
  'admin trust bad jwk': (m) => [
    'ADMIN/admin/trust/grants/jwt-bearer/issuers',
    json('POST', {
      issuer: `https://issuer.example/${m}`,
      subject: `sub-${m}`,
      expires_at: '2099-01-01T00:00:00Z',
      jwk: { kty: `kty-${m}`, kid: `kid-${m}` },
    }),
  ],
  'scim bad filter': (m) => [
    `SCIM/Users?filter=${encodeURIComponent(`userName eq "${m}" and (`)}`,
    { headers: { authorization: `Bearer ${dir.scim.secret}` } },
  ],
  'scim broken body': (m) => [
    'SCIM/Users',
    {
      method: 'POST',
      headers: { authorization: `Bearer ${dir.scim.secret}`, 'content-type': 'application/scim+json' },
      body: `{"userName":"${m}",`,
    },
  ],
  'scim unknown user': (m) => [
    `SCIM/Users/${encodeURIComponent(m)}`,
    { headers: { authorization: `Bearer ${dir.scim.secret}` } },
  ],
  'scim bad patch': (m) => [
    `SCIM/Users/${encodeURIComponent(m)}`,
    {
      method: 'PATCH',
      headers: { authorization: `Bearer ${dir.scim.secret}`, 'content-type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: `op-${m}` }],
      }),
    },
  ],
  'dsync bad webhook': (m) => [
    'DSYNC',
    json(
      'POST',
      { tenant: 't', product: 'p', type: 'okta-scim-v2', webhook_url: `zz://${m}`, webhook_secret: 's' },
      { authorization: `Api-Key ${API_KEY}` },
    ),
  ],
  'dsync bad type': (m) => [
    'DSYNC',
    json('POST', { tenant: `t-${m}`, product: 'p', type: `type-${m}` }, { authorization: `Api-Key ${API_KEY}` }),
  ],
  'dsync unknown directory': (m) => [
    `DSYNC/users?directoryId=${encodeURIComponent(m)}`,
    { headers: { authorization: `Api-Key ${API_KEY}` } },
  ],
};

function urlOf(path: string): string {
  const scim = new URL(dir.scim.endpoint ?? '').pathname;
  if (path.startsWith('ADMIN')) return `${s.adminUrl}${path.slice(5)}`;
  if (path.startsWith('SCIM')) return `${s.publicUrl}${scim}${path.slice(4)}`;
  if (path.startsWith('DSYNC')) return `${s.adminUrl}/api/v1/dsync${path.slice(5)}`;
  return `${s.publicUrl}${path}`;
}

async function run(kind: string, i: number): Promise<Seen> {
  const [path, init] = (KINDS[kind] as (m: string) => [string, RequestInit])(marker(i));
  const r = await fetch(urlOf(path), init);
  const headers = [...r.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
  return { i, kind, status: r.status, text: readable(`${headers}\n${await r.text()}`) };
}

describe('error isolation across every API family', () => {
  it('no failing request of any family sees another request’s details, under concurrency', async () => {
    const kinds = Object.keys(KINDS);
    const jobs: Array<Promise<Seen>> = [];
    for (let round = 0; round < 2; round++) for (let i = 0; i < N; i++) for (const k of kinds) jobs.push(run(k, i));
    const seen = await Promise.all(jobs);
    for (const x of seen) {
      expect(x.status, `${x.kind}: ${x.text}`).toBeGreaterThanOrEqual(300);
      expect(x.status, `${x.kind}: ${x.text}`).toBeLessThan(500);
      for (let j = 0; j < N; j++)
        if (j !== x.i) expect(x.text, `${x.kind} #${x.i} leaked ${marker(j)}`).not.toContain(marker(j));
    }
    // The check has teeth: several families (OAuth2 authorize, Hydra admin, SCIM) echo the caller's value in their error.
    const echoing = new Set(seen.filter((x) => x.text.includes(marker(x.i))).map((x) => x.kind));
    expect(echoing.size, [...echoing].join(', ')).toBeGreaterThanOrEqual(3);
  });
});
