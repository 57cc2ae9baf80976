/**
 * The hot paths on a full database (issue 30), gatehouse only, each beside the same path on the
 * shared, nearly empty database of the other scenarios:
 *
 * - OAuth 2.0, on the fixture of test/bench/oauth2-volume.ts (10,000 clients, 1,000,000 access and
 *   1,000,000 refresh tokens of which 1,000,000 expired, 1,000,000 login sessions, 200,000 consent
 *   sessions, 100,000 webhook logs and audit events): `client_credentials` (opaque), the refresh
 *   token grant, introspection of an opaque token, the whole authorization-code flow, and last (it
 *   deletes the expired rows) one janitor pass over the expired tokens; stateless JWT
 *   `client_credentials` on a second process with the same fixture (a setting of its own). The
 *   empty-database counterparts are the scenarios of oauth2.ts and flows.ts, and here the refresh
 *   token grant, which had none.
 * - Directory sync, on the fixture of test/bench/dsync-volume.ts (a directory of 100,000 users among
 *   150,000): SCIM `PUT /Users/{id}`, a member `PATCH` of the group every user is in, a filtered
 *   `GET /Users?filter=userName eq "…"` and a page deep into `GET /Users` (`startIndex` 99,001 to
 *   99,901, `count=100`); their counterparts run on the shared process against a directory of 100
 *   users loaded the same way (the PATCH's is the empty-directory PATCH of dsync.ts).
 *
 * The full-database scenarios of a fixture share one fresh process (`group`): the fixture loads
 * once, when the first of them is set up, and that one reports its load time and rows. `--smoke`
 * loads both fixtures at a hundredth.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  type LoadedVolume,
  loadDsyncVolume,
  SMOKE_VOLUME,
  VOLUME,
  type VolumeSpec,
  volumeGroup,
  volumeUser,
} from '../dsync-volume.ts';
import { type LoadedOAuth2Volume, loadOAuth2Volume, OAUTH2_SMOKE_VOLUME, OAUTH2_VOLUME } from '../oauth2-volume.ts';
import type { Proc } from '../proc.ts';
import type { BenchRequest, DriveResult, Scenario, Side } from '../types.ts';
import { API_KEY, memberPatches, oktaUser, receiver, SCIM_JSON, settled } from './dsync.ts';
import { codeClient, FlowError, type GhClient, gatehouseSide, ghFlow, loops } from './flows.ts';
import { basic, FORM, ghClientCredentials, ghIntrospection, ghStatelessJwt, STATELESS } from './oauth2.ts';

const SMOKE = process.argv.includes('--smoke');
const OAUTH2 = SMOKE ? OAUTH2_SMOKE_VOLUME : OAUTH2_VOLUME;
const DSYNC = SMOKE ? SMOKE_VOLUME : VOLUME;
/** The directory of the empty-database counterparts: 100 users, loaded as the large one is. */
const SMALL: VolumeSpec = {
  large: { users: 100, groups: 5, memberships: 200, events: 200 },
  small: { directories: 0, users: 0, groups: 0, memberships: 0, events: 0 },
};
const n = (x: number) => x.toLocaleString('en');

/** One load per process: the first scenario of a group to be set up loads, the others wait for it. */
function once<T>(load: (p: Proc) => Promise<T>) {
  const loads = new WeakMap<Proc, Promise<T>>();
  return (p: Proc): { value: Promise<T>; first: boolean } => {
    const had = loads.get(p);
    if (had) return { value: had, first: false };
    const value = load(p);
    loads.set(p, value);
    return { value, first: true };
  };
}

/** `side` set up after `fixture` has loaded into the process; the scenario that loaded it reports it. */
function onFixture<T>(
  fixture: (p: Proc) => { value: Promise<T>; first: boolean },
  describe: (v: T) => Record<string, string>,
  side: Side,
): Side {
  let loaded: T | undefined;
  return {
    ...side,
    async setup(p) {
      const f = fixture(p);
      const v = await f.value;
      if (f.first) loaded = v;
      return side.setup(p);
    },
    async report(p) {
      return { ...(loaded === undefined ? {} : describe(loaded)), ...(await side.report?.(p)) };
    },
  };
}

const oauth2Fixture = once((p) => loadOAuth2Volume(p, OAUTH2, API_KEY));
const onOAuth2 = (side: Side) =>
  onFixture(
    oauth2Fixture,
    (v: LoadedOAuth2Volume) => ({
      'fixture loaded in, s': v.seconds.toFixed(1),
      ...Object.fromEntries(Object.entries(v.rows).map(([t, x]) => [t.replace('oauth2_', ''), n(x)])),
      'expired tokens': n(v.expiredTokens),
    }),
    side,
  );

/**
 * The refresh token grant: `connections` loops, each rotating a refresh token of its own (a used
 * one cannot be sent again), the tokens first obtained through whole flows (not measured).
 */
function refreshGrant(): Side {
  const state: { client?: GhClient; tokens: string[] } = { tokens: [] };
  const refresh = async (p: Proc) => {
    const client = state.client as GhClient;
    const token = state.tokens.pop();
    if (!token) throw new FlowError('no refresh token left (an earlier refresh failed)');
    const res = await fetch(`${p.url}/oauth2/token`, {
      method: 'POST',
      headers: { ...FORM, authorization: basic(client.client_id, client.client_secret) },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }),
    });
    const body = (await res.json()) as { refresh_token?: string };
    if (res.status !== 200 || !body.refresh_token)
      throw new FlowError(`refresh answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    state.tokens.push(body.refresh_token);
  };
  const topUp = async (p: Proc, count: number) => {
    while (state.tokens.length < count)
      state.tokens.push((await ghFlow(p, state.client as GhClient)).refresh_token as string);
  };
  return {
    url: (p) => p.url,
    async setup(p) {
      state.client = await codeClient(p);
      await topUp(p, 1);
      await refresh(p);
      return [];
    },
    async drive(p, o) {
      await topUp(p, o.connections);
      return loops(o.connections, o.seconds, () => refresh(p));
    },
  };
}

const BIN = join(import.meta.dirname, '../../../bin/gatehouse.mjs');
const run = promisify(execFile);

/**
 * One janitor pass over the tokens (`gatehouse janitor <dsn> --tokens`, the CLI an operator runs,
 * at the default `janitor.batch_size`, with a limit above the fixture's expired tokens so that one
 * pass takes them all). A "request" is a deleted row. Meanwhile the database is sampled every 20 ms
 * for the oldest transaction of a janitor delete; afterwards the transactions the database committed
 * during the pass must be at least rows ÷ batch size (no statement deleted more than a batch), or
 * the pass counts as an error.
 */
function janitorPass(): Side {
  const last: Record<string, string> = {};
  return {
    url: (p) => p.url,
    setup: async () => [],
    async drive(p, o): Promise<DriveResult> {
      if (o.warmup) return { units: 0, errors: 0, latencies: [], elapsedMs: 1 };
      const c = new pg.Client({ connectionString: p.dsn });
      await c.connect();
      try {
        const commits = async () =>
          Number(
            (
              await c.query<{ n: string }>(
                `select pg_stat_force_next_flush(), xact_commit as n from pg_stat_database where datname = current_database()`,
              )
            ).rows[0]?.n,
          );
        // janitor.batch_size's default, given explicitly (BENCH_JANITOR_BATCH: another).
        const batch = Number(process.env.BENCH_JANITOR_BATCH ?? 100);
        const before = await commits();
        let longest = 0;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            const { rows } = await c.query<{ ms: number | null }>(
              `select max(extract(epoch from now() - xact_start) * 1000)::float8 as ms from pg_stat_activity
               where datname = current_database() and state = 'active' and query ilike 'delete from "oauth2_%'`,
            );
            longest = Math.max(longest, rows[0]?.ms ?? 0);
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        const started = performance.now();
        const { stdout } = await run(
          process.execPath,
          [
            BIN,
            'janitor',
            p.dsn,
            '--tokens',
            '--limit',
            String(OAUTH2.tokens * 2),
            '--batch-size',
            String(batch),
            '--json',
          ],
          { env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'error' }, maxBuffer: 1 << 20, timeout: 600_000 },
        );
        const elapsedMs = performance.now() - started;
        sampling = false;
        await sampler;
        // The counts are printed indented (log lines, if any, are one line each).
        const deleted = (JSON.parse(stdout.slice(stdout.indexOf('{\n'))) as { deleted: Record<string, number> })
          .deleted;
        const rows = Object.values(deleted).reduce((a, b) => a + b, 0);
        const txns = (await commits()) - before;
        const bounded = txns >= Math.ceil(rows / batch);
        Object.assign(last, {
          'rows deleted': n(rows),
          'rows/s': n(Math.round(rows / (elapsedMs / 1000))),
          'pass, s (CLI start included)': (elapsedMs / 1000).toFixed(1),
          'batch size': String(batch),
          'transactions committed meanwhile': n(txns),
          'longest delete transaction seen, ms': longest.toFixed(0),
          bounded: bounded ? 'yes' : 'NO',
        });
        return { units: rows, errors: bounded ? 0 : 1, latencies: [elapsedMs], elapsedMs };
      } finally {
        await c.end();
      }
    },
    report: async () => last,
  };
}

// Directory sync: the large directory of a fixture and what the scenarios need of it.
interface DsyncLoaded {
  volume: LoadedVolume;
  users: number;
}
const dsyncFixture = (spec: VolumeSpec) =>
  once(async (p): Promise<DsyncLoaded> => {
    const rx = await receiver();
    const volume = await loadDsyncVolume({ adminUrl: p.adminUrl, dsn: p.dsn, apiKey: API_KEY }, spec, rx.url);
    return { volume, users: spec.large.users };
  });
const fullDirectory = dsyncFixture(DSYNC);
const smallDirectory = dsyncFixture(SMALL);

/** A SCIM side on the large directory of `fixture`: `requests` builds its requests (one checked: 200). */
function scim(
  fixture: ReturnType<typeof dsyncFixture>,
  requests: (d: DsyncLoaded, auth: Record<string, string>) => BenchRequest,
): Side {
  const side: Side = {
    url: (p) => p.url,
    async setup(p) {
      const d = await fixture(p).value;
      const req = requests(d, { ...SCIM_JSON, authorization: `Bearer ${d.volume.large.secret}` });
      const one = req.each?.(0) ?? { path: req.path, headers: req.headers ?? {}, body: '' };
      const body = typeof req.body === 'function' ? req.body(0) : (req.body ?? one.body);
      const res = await fetch(`${p.url}${one.path}`, {
        method: req.method ?? 'GET',
        headers: one.headers,
        ...(req.method && req.method !== 'GET' ? { body } : {}),
      });
      if (res.status !== 200)
        throw new Error(`${req.method ?? 'GET'} ${one.path} answered ${res.status}: ${await res.text()}`);
      return [req];
    },
  };
  return onFixture(
    fixture,
    (d: DsyncLoaded) => ({
      'fixture loaded in, s': d.volume.seconds.toFixed(1),
      ...Object.fromEntries(Object.entries(d.volume.rows).map(([t, x]) => [t.replace('dsync_', ''), n(x)])),
    }),
    side,
  );
}

/** Users of the large directory spread over the whole of it: the n-th request's. */
const spread = (d: DsyncLoaded, i: number) => 1 + ((i * 7919) % d.users);

const putUser = (f: ReturnType<typeof dsyncFixture>) =>
  settled(
    scim(f, (d, headers) => {
      const dir = d.volume.large;
      const at = (i: number) => {
        const k = spread(d, i);
        const u = volumeUser(dir.id, k);
        return { path: `${dir.path}/Users/${u.id}`, headers, body: oktaUser(u.userName, k) };
      };
      return { method: 'PUT', ...at(0), each: at };
    }),
    [],
  );

/** Members 1..50 of "Everyone" (the group every user is in) removed and added back, in turn. */
const patchEveryone = (f: ReturnType<typeof dsyncFixture>) =>
  settled(
    scim(f, (d, headers) => {
      const dir = d.volume.large;
      const members = Array.from({ length: Math.min(50, d.users) }, (_, i) => volumeUser(dir.id, i + 1));
      const add = memberPatches(members.map((m) => ({ id: m.id, display: m.userName })));
      // The users are members already: skip the first pass of adds so that every PATCH changes something.
      for (let i = 0; i < members.length; i++) add();
      return { method: 'PATCH', path: `${dir.path}/Groups/${volumeGroup(dir.id, 0)}`, headers, body: add };
    }),
    [],
  );

const filterUser = (f: ReturnType<typeof dsyncFixture>) =>
  scim(f, (d, headers) => {
    const dir = d.volume.large;
    const at = (i: number) => ({
      path: `${dir.path}/Users?filter=${encodeURIComponent(`userName eq "${volumeUser(dir.id, spread(d, i)).userName}"`)}`,
      headers,
      body: '',
    });
    return { ...at(0), each: at };
  });

/** Pages of 100 among the last ten of the directory (`startIndex` 99,001 … 99,901 at 100,000 users). */
const deepPage = (f: ReturnType<typeof dsyncFixture>) =>
  scim(f, (d, headers) => {
    const dir = d.volume.large;
    const at = (i: number) => {
      const start = Math.max(1, d.users - 999 + (i % 10) * 100);
      return { path: `${dir.path}/Users?startIndex=${start}&count=100`, headers, body: '' };
    };
    return { ...at(0), each: at };
  });

const FULL = `full database: ${n(OAUTH2.tokens)} access + ${n(OAUTH2.tokens)} refresh tokens, ${n(OAUTH2.clients)} clients`;
const FULL_DIR = `volume fixture: a directory of ${n(DSYNC.large.users)} users`;

export const scenarios: Scenario[] = [
  {
    name: 'token: refresh_token grant (rotation, per refresh)',
    connections: 20,
    gatehouse: refreshGrant(),
  },
  {
    name: `token: client_credentials, opaque (${FULL})`,
    fresh: true,
    group: 'oauth2 volume',
    gatehouse: onOAuth2(ghClientCredentials),
  },
  {
    name: `token: refresh_token grant (rotation, per refresh) (${FULL})`,
    connections: 20,
    fresh: true,
    group: 'oauth2 volume',
    gatehouse: onOAuth2(refreshGrant()),
  },
  {
    name: `introspection of an opaque token (${FULL})`,
    fresh: true,
    group: 'oauth2 volume',
    gatehouse: onOAuth2(ghIntrospection),
  },
  {
    name: `authorization-code flow, end to end (per flow) (${FULL})`,
    connections: 20,
    fresh: true,
    group: 'oauth2 volume',
    gatehouse: onOAuth2(gatehouseSide(false)),
  },
  {
    name: `janitor: one pass over ${n(OAUTH2.tokens)} expired tokens (per row deleted) (${FULL})`,
    fresh: true,
    group: 'oauth2 volume',
    rounds: 1,
    gatehouse: onOAuth2(janitorPass()),
  },
  {
    name: `token: client_credentials, stateless JWT ES256 (${FULL})`,
    fresh: true,
    group: 'oauth2 volume, stateless',
    overrides: STATELESS,
    gatehouse: onOAuth2(ghStatelessJwt),
  },
  {
    name: 'SCIM PUT /Users/{id} (a directory of 100 users)',
    connections: 20,
    gatehouse: putUser(smallDirectory),
  },
  {
    name: 'SCIM GET /Users?filter=userName eq (a directory of 100 users)',
    connections: 20,
    gatehouse: filterUser(smallDirectory),
  },
  {
    name: 'SCIM GET /Users, a page of 100 (a directory of 100 users)',
    connections: 20,
    gatehouse: deepPage(smallDirectory),
  },
  {
    name: `SCIM PUT /Users/{id} (${FULL_DIR})`,
    connections: 20,
    fresh: true,
    group: 'dsync volume',
    gatehouse: putUser(fullDirectory),
  },
  {
    name: `SCIM PATCH /Groups/{id} members of the group of all ${n(DSYNC.large.users)} users (${FULL_DIR})`,
    connections: 20,
    fresh: true,
    group: 'dsync volume',
    gatehouse: patchEveryone(fullDirectory),
  },
  {
    name: `SCIM GET /Users?filter=userName eq (${FULL_DIR})`,
    connections: 20,
    fresh: true,
    group: 'dsync volume',
    gatehouse: filterUser(fullDirectory),
  },
  {
    name: `SCIM GET /Users, a page of 100 at startIndex ${n(Math.max(1, DSYNC.large.users - 999))}+ (${FULL_DIR})`,
    connections: 20,
    fresh: true,
    group: 'dsync volume',
    gatehouse: deepPage(fullDirectory),
  },
];
