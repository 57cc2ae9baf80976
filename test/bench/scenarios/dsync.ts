/**
 * Directory sync beside BoxyHQ Jackson (its directory-sync controller as a library, on its own
 * database on the same PostgreSQL, `requests.handle` behind a minimal HTTP front): SCIM user
 * creation and group-membership PATCH with Okta-shaped bodies, concurrency 20, each twice:
 * - both with a webhook (a loopback receiver): the same work on both sides, every change delivered
 *   to the receiver. gatehouse stores the event and enqueues its delivery in the write's
 *   transaction, and its worker (in the same process) posts it; Jackson posts it inline, in the
 *   request, as its SCIM handler does for a directory with a webhook;
 * - gatehouse with a webhook, Jackson without (Jackson then sends nothing): the earlier rounds'
 *   configuration, kept for comparison.
 *
 * The webhook scenario (gatehouse only) measures delivery end to end: SCIM `PUT /Users/{id}` on 8
 * directories, each a `user.updated` event delivered to the receiver; reported once the backlog has
 * drained (bounded wait): events delivered per second and commit→receipt latency p50/p99.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import type { Proc } from '../proc.ts';
import type { BenchRequest, Scenario, Side } from '../types.ts';

export const API_KEY = 'bench-api-key';
export const SCIM_JSON = { 'content-type': 'application/scim+json' };
const receivers: Receiver[] = [];

export async function receiver(): Promise<Receiver> {
  const rx = await startReceiver();
  receivers.push(rx);
  return rx;
}

export interface Dir {
  /** path prefix of the SCIM endpoint (…/{directoryId}) */
  path: string;
  secret: string;
  /** The loopback receiver of the directory's webhook, if it has one. */
  rx?: Receiver;
}

/** A directory as both sides create it (Jackson's `directories.create` fields), with its webhook if given. */
const directoryBody = (product: string, webhook?: string) =>
  JSON.stringify({
    tenant: 'bench',
    product,
    type: 'okta-scim-v2',
    name: product,
    ...(webhook ? { webhook_url: webhook, webhook_secret: 'bench-webhook-secret' } : {}),
  });

async function ghDirectory(p: Proc, product: string, webhook?: string): Promise<Dir> {
  const r = await fetch(`${p.adminUrl}/api/v1/dsync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Api-Key ${API_KEY}` },
    body: directoryBody(product, webhook),
  });
  if (r.status !== 201) throw new Error(`directory create answered ${r.status}: ${await r.text()}`);
  const d = ((await r.json()) as { data: { scim: { endpoint: string; secret: string } } }).data;
  return { path: new URL(d.scim.endpoint).pathname, secret: d.scim.secret };
}

async function jacksonDirectory(p: Proc, product: string, webhook?: string): Promise<Dir> {
  const r = await fetch(`${p.url}/bench/directories`, {
    method: 'POST',
    body: directoryBody(product, webhook),
  });
  if (r.status !== 201) throw new Error(`jackson directory create answered ${r.status}: ${await r.text()}`);
  const d = (await r.json()) as { scim: { path: string; secret: string } };
  return { path: d.scim.path, secret: d.scim.secret };
}

/** An Okta-shaped SCIM user (Okta's SCIM 2.0 provisioning sends these fields on create). */
export const oktaUser = (email: string, i: number) =>
  JSON.stringify({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: email,
    name: { givenName: 'Bench', familyName: `User${i}` },
    emails: [{ primary: true, value: email, type: 'work' }],
    displayName: `Bench User${i}`,
    locale: 'en-US',
    externalId: `00u${i.toString(36).padStart(8, '0')}`,
    groups: [],
    active: true,
  });

async function post(url: string, dir: Dir, resource: 'Users' | 'Groups', body: string): Promise<string> {
  const r = await fetch(`${url}${dir.path}/${resource}`, {
    method: 'POST',
    headers: { ...SCIM_JSON, authorization: `Bearer ${dir.secret}` },
    body,
  });
  if (r.status !== 201) throw new Error(`SCIM POST ${resource} answered ${r.status}: ${await r.text()}`);
  return ((await r.json()) as { id: string }).id;
}

function createUsers(dirOf: (p: Proc) => Promise<Dir>): Side {
  const dirs: Dir[] = [];
  return {
    url: (p) => p.url,
    report: async () => webhooksReceived(dirs),
    async setup(p) {
      const dir = await dirOf(p);
      dirs.push(dir);
      const tag = randomBytes(3).toString('hex');
      let seq = 0;
      return [
        {
          method: 'POST',
          path: `${dir.path}/Users`,
          headers: { ...SCIM_JSON, authorization: `Bearer ${dir.secret}` },
          body: () => {
            const i = seq++;
            return oktaUser(`u${i}-${tag}@example.com`, i);
          },
        },
      ];
    },
  };
}

const MEMBERS = 50;

/** PATCH /Groups/{id}: Okta adds a member with `add`/`members` and removes one with a `members[value eq …]` path. */
function patchMembers(dirOf: (p: Proc) => Promise<Dir>): Side {
  const dirs: Dir[] = [];
  return {
    url: (p) => p.url,
    report: async () => webhooksReceived(dirs),
    async setup(p) {
      const dir = await dirOf(p);
      dirs.push(dir);
      const tag = randomBytes(3).toString('hex');
      const users: string[] = [];
      for (let i = 0; i < MEMBERS; i++)
        users.push(await post(p.url, dir, 'Users', oktaUser(`m${i}-${tag}@example.com`, i)));
      const group = await post(
        p.url,
        dir,
        'Groups',
        JSON.stringify({
          schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
          displayName: `g-${tag}`,
          members: [],
        }),
      );
      return [
        {
          method: 'PATCH',
          path: `${dir.path}/Groups/${group}`,
          headers: { ...SCIM_JSON, authorization: `Bearer ${dir.secret}` },
          body: memberPatches(users.map((id, i) => ({ id, display: `m${i}-${tag}@example.com` }))),
        },
      ];
    },
  };
}

/**
 * Bodies of group `PATCH`es as Okta sends them, one per call: each of `members` added in turn
 * (`add`/`members`), then each removed (`members[value eq …]`), and again.
 */
export function memberPatches(members: Array<{ id: string; display: string }>): () => string {
  let seq = 0;
  return () => {
    const i = seq++;
    const m = members[i % members.length] as { id: string; display: string };
    const op =
      Math.floor(i / members.length) % 2 === 0
        ? { op: 'add', path: 'members', value: [{ value: m.id, display: m.display }] }
        : { op: 'remove', path: `members[value eq "${m.id}"]` };
    return JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [op] });
  };
}

const newProduct = () => `p-${randomBytes(3).toString('hex')}`;
/** A directory made by `create` whose webhook is a new loopback receiver. */
const withReceiver =
  (create: (p: Proc, product: string, webhook: string) => Promise<Dir>) =>
  async (p: Proc): Promise<Dir> => {
    const rx = await receiver();
    return { ...(await create(p, newProduct(), rx.url)), rx };
  };
export const ghDir = withReceiver(ghDirectory);
const jDir = (p: Proc) => jacksonDirectory(p, newProduct());
export const jDirHook = withReceiver(jacksonDirectory);

/** What the receivers of a side's directories got (the work is the same only if both sides deliver). */
function webhooksReceived(dirs: Dir[]): Record<string, number> {
  const rxs = dirs.flatMap((d) => (d.rx ? [d.rx] : []));
  return rxs.length ? { 'webhook deliveries received': rxs.reduce((n, rx) => n + rx.delivered().length, 0) } : {};
}

const DIRECTORIES = 8;
const USERS_PER_DIRECTORY = 5;
const DRAIN_LIMIT_MS = 120_000;
const percentile = (sorted: number[], q: number) =>
  sorted.length ? (sorted[Math.min(sorted.length - 1, Math.ceil((q / 100) * sorted.length) - 1)] as number) : 0;

/** Waits (at most DRAIN_LIMIT_MS) until gatehouse's webhook outbox is empty; false when it was not. */
async function drain(p: Proc): Promise<boolean> {
  const c = new pg.Client({ connectionString: p.dsn });
  await c.connect();
  try {
    const deadline = Date.now() + DRAIN_LIMIT_MS;
    for (;;) {
      const { rows } = await c.query<{ n: number }>('select count(*)::int as n from dsync_webhook_outbox');
      if (!rows[0]?.n) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await c.end();
  }
}

/**
 * gatehouse's side of a SCIM scenario: before each round (of either side) the deliveries the last
 * round queued are left to finish, and the report says how long that took at most — the backlog a
 * round of writes leaves behind at this rate.
 */
export function settled(side: Side, waits: number[]): Side {
  return {
    ...side,
    async settle(p) {
      const started = Date.now();
      if (!(await drain(p))) throw new Error(`webhook backlog not drained within ${DRAIN_LIMIT_MS / 1000} s`);
      waits.push(Date.now() - started);
    },
    async report(p) {
      return {
        ...(await side.report?.(p)),
        'longest wait for the backlog before a round, ms': Math.max(0, ...waits),
      };
    },
  };
}

function webhooks(): Side {
  const state: { rx?: Receiver; warmup: number } = { warmup: 0 };
  return {
    url: (p) => p.url,
    async setup(p) {
      const rx = await receiver();
      state.rx = rx;
      const requests: BenchRequest[] = [];
      for (let d = 0; d < DIRECTORIES; d++) {
        const dir = await ghDirectory(p, `wh-${d}-${randomBytes(3).toString('hex')}`, rx.url);
        for (let u = 0; u < USERS_PER_DIRECTORY; u++) {
          const body = oktaUser(`wh-${d}-${u}-${randomBytes(3).toString('hex')}@example.com`, u);
          const id = await post(p.url, dir, 'Users', body);
          requests.push({
            method: 'PUT',
            path: `${dir.path}/Users/${id}`,
            headers: { ...SCIM_JSON, authorization: `Bearer ${dir.secret}` },
            body,
          });
        }
      }
      await drain(p);
      state.warmup = rx.requests.length;
      // Consecutive requests (over all connections) go to the 8 directories in turn, and each
      // directory's 5 users in turn: steady traffic on every directory, as a fleet of identity
      // providers sends it, rather than the 20 connections going through the list in step (bursts
      // of concurrent PUTs to one user of one directory).
      const target = (n: number) => {
        const k = n % requests.length;
        return requests[(k % DIRECTORIES) * USERS_PER_DIRECTORY + Math.floor(k / DIRECTORIES)] as BenchRequest;
      };
      return [
        {
          method: 'PUT',
          path: requests[0]?.path as string,
          each: (n) => {
            const q = target(n);
            return { path: q.path, headers: q.headers ?? {}, body: q.body as string };
          },
        },
      ];
    },
    async report(p) {
      const rx = state.rx as Receiver;
      const drained = await drain(p);
      const got = rx.delivered().slice(state.warmup);
      const latencies = got.map((r) => r.at - Date.parse(r.body.created_at)).sort((a, b) => a - b);
      const first = Math.min(...got.map((r) => Date.parse(r.body.created_at)));
      const last = Math.max(...got.map((r) => r.at));
      return {
        'events delivered': got.length,
        duplicates: got.length - new Set(got.map((r) => r.body.id)).size,
        'delivered/s': got.length ? Math.round((got.length / (last - first)) * 1000) : 0,
        'commit→receipt p50 ms': percentile(latencies, 50),
        'p99 ms': percentile(latencies, 99),
        drained: drained ? 'yes' : `no (${DRAIN_LIMIT_MS / 1000}s limit)`,
      };
    },
  };
}

export const scenarios: Scenario[] = [
  {
    name: 'SCIM POST /Users (Okta-shaped, one directory, both with a webhook)',
    connections: 20,
    gatehouse: settled(createUsers(ghDir), []),
    peer: { kind: 'jackson', side: createUsers(jDirHook) },
  },
  {
    name: 'SCIM POST /Users (Okta-shaped, one directory, webhook on gatehouse only)',
    connections: 20,
    gatehouse: settled(createUsers(ghDir), []),
    peer: { kind: 'jackson', side: createUsers(jDir) },
  },
  {
    name: 'SCIM PATCH /Groups/{id} members (one directory, both with a webhook)',
    connections: 20,
    gatehouse: settled(patchMembers(ghDir), []),
    peer: { kind: 'jackson', side: patchMembers(jDirHook) },
  },
  {
    name: 'SCIM PATCH /Groups/{id} members (one directory, webhook on gatehouse only)',
    connections: 20,
    gatehouse: settled(patchMembers(ghDir), []),
    peer: { kind: 'jackson', side: patchMembers(jDir) },
  },
  {
    name: 'webhooks: SCIM PUT /Users → signed delivery (8 directories)',
    connections: 20,
    gatehouse: webhooks(),
  },
];

/** Closes the loopback receivers (called by the runner at the end). */
export async function closeAll(): Promise<void> {
  for (const r of receivers.splice(0)) await r.close();
}
