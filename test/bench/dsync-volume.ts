/**
 * A directory-sync database at realistic volume, loaded fast: the directories through the v1 API
 * (so that their SCIM secrets are sealed as gatehouse seals them), everything below them with
 * set-based SQL (`INSERT … SELECT generate_series`), then `VACUUM (ANALYZE)` as autovacuum would
 * long have done on a database of that age. Not through SCIM: 100,000 users and a million events
 * load in well under a minute instead of hours.
 *
 * VOLUME: one large directory — 100,000 users, 5,000 groups (one of them, "Everyone", holds every
 * user), 500,000 memberships (five groups per user), 800,000 events — beside 50 smaller ones of
 * 1,000 users, 50 groups, 2,000 memberships and 4,000 events each: 150,000 users, 600,000
 * memberships and 1,000,000 events in all. The events are delivered history (`delivered_at` set,
 * nothing in the webhook outbox) and each directory's `event_seq` continues after them. Rows look
 * like what Okta provisions (the raw user as Okta sends it); event payloads are Jackson's envelope
 * with a short `data`.
 *
 * Used by the "SCIM POST /Users into a directory of 100,000 users" scenario (scenarios/dsync-growth.ts);
 * `--smoke` loads SMOKE_VOLUME, a hundredth of it.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';

export interface DirectoryVolume {
  users: number;
  groups: number;
  memberships: number;
  events: number;
}

export interface VolumeSpec {
  large: DirectoryVolume;
  /** How many smaller directories beside it, and what each holds. */
  small: DirectoryVolume & { directories: number };
}

export const VOLUME: VolumeSpec = {
  large: { users: 100_000, groups: 5_000, memberships: 500_000, events: 800_000 },
  small: { directories: 50, users: 1_000, groups: 50, memberships: 2_000, events: 4_000 },
};

export const SMOKE_VOLUME: VolumeSpec = {
  large: { users: 1_000, groups: 50, memberships: 5_000, events: 8_000 },
  small: { directories: 5, users: 100, groups: 5, memberships: 200, events: 400 },
};

/** A directory as an identity provider knows it: its SCIM path and bearer secret. */
export interface VolumeDirectory {
  id: string;
  path: string;
  secret: string;
}

export interface LoadedVolume {
  large: VolumeDirectory;
  small: VolumeDirectory[];
  /** Rows per table after the load (all directories of the database). */
  rows: Record<string, number>;
  /** Seconds the load took (directories, rows, VACUUM ANALYZE). */
  seconds: number;
}

export interface VolumeTarget {
  /** The admin listener (v1 API). */
  adminUrl: string;
  /** The database gatehouse serves from. */
  dsn: string;
  /** A key of `dsync.api_keys`. */
  apiKey: string;
}

/** A directory of tenant `volume` through the v1 API (its SCIM secret sealed as gatehouse seals it). */
export async function createDirectory(t: VolumeTarget, product: string, webhook?: string): Promise<VolumeDirectory> {
  const r = await fetch(`${t.adminUrl}/api/v1/dsync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Api-Key ${t.apiKey}` },
    body: JSON.stringify({
      tenant: 'volume',
      product,
      type: 'okta-scim-v2',
      name: product,
      ...(webhook ? { webhook_url: webhook, webhook_secret: 'volume-webhook-secret' } : {}),
    }),
  });
  if (r.status !== 201) throw new Error(`directory create answered ${r.status}: ${await r.text()}`);
  const d = ((await r.json()) as { data: { id: string; scim: { endpoint: string; secret: string } } }).data;
  return { id: d.id, path: new URL(d.scim.endpoint).pathname, secret: d.scim.secret };
}

/** md5 of `x` as PostgreSQL's `md5(x)::uuid::text` writes it. */
const md5uuid = (x: string) =>
  createHash('md5')
    .update(x)
    .digest('hex')
    .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');

/** User `k` (1-based) of a directory of the fixture: its id and userName, as USERS below makes them. */
export const volumeUser = (directoryId: string, k: number) => ({
  id: md5uuid(`${directoryId}:u:${k}`),
  userName: `user${k}@${directoryId.slice(0, 8)}.example.com`,
});

/** The id of group `k` (0-based; 0 is "Everyone") of a directory of the fixture, as GROUPS makes it. */
export const volumeGroup = (directoryId: string, k: number) => md5uuid(`${directoryId}:g:${k}`);

// Row ids are uuids derived from (directory, kind, number), so memberships and events name users and
// groups without reading them back. `$1`: the directories (uuid[]), `$2`..: the volume of each.
const USERS = `
  insert into dsync_users (directory_id, id, user_name, external_id, email, first_name, last_name, active, raw,
    created_at, updated_at)
  select d.id, md5(d.id || ':u:' || k)::uuid::text, e.email, '00v' || k, e.email, 'Volume', 'User' || k, true,
    json_build_object('schemas', json_build_array('urn:ietf:params:scim:schemas:core:2.0:User'),
      'userName', e.email, 'name', json_build_object('givenName', 'Volume', 'familyName', 'User' || k),
      'emails', json_build_array(json_build_object('primary', true, 'value', e.email, 'type', 'work')),
      'displayName', 'Volume User' || k, 'locale', 'en-US', 'externalId', '00v' || k, 'groups', '[]'::json,
      'active', true),
    now() - ($2::int - k) * interval '10 seconds', now() - ($2::int - k) * interval '10 seconds'
  from unnest($1::uuid[]) d(id), generate_series(1, $2::int) k,
    lateral (select 'user' || k || '@' || left(d.id::text, 8) || '.example.com' as email) e`;

const GROUPS = `
  insert into dsync_groups (directory_id, id, name, raw, created_at, updated_at)
  select d.id, md5(d.id || ':g:' || k)::uuid::text, n.name,
    json_build_object('schemas', json_build_array('urn:ietf:params:scim:schemas:core:2.0:Group'),
      'displayName', n.name, 'members', '[]'::json),
    now() - interval '30 days', now() - interval '30 days'
  from unnest($1::uuid[]) d(id), generate_series(0, $2::int - 1) k,
    lateral (select case when k = 0 then 'Everyone' else 'Group ' || k end as name) n`;

// Every user is in "Everyone" (group 0) and in `$4 - 1` other groups spread over the rest.
const MEMBERSHIPS = `
  insert into dsync_group_members (directory_id, group_id, user_id, created_at)
  select d.id,
    md5(d.id || ':g:' || case when t = 0 or $3::int = 1 then 0 else 1 + (u * 31 + t * 1009) % ($3::int - 1) end)::uuid::text,
    md5(d.id || ':u:' || u)::uuid::text, now() - interval '30 days'
  from unnest($1::uuid[]) d(id), generate_series(1, $2::int) u, generate_series(0, $4::int - 1) t
  on conflict do nothing`;

// The directory's history in order: its users created, its groups created, the memberships added,
// then updates. `$2` users, `$3` groups, `$4` memberships, `$5` events.
const EVENTS = `
  insert into dsync_events (id, directory_id, seq, event, payload, created_at, delivered_at)
  select gen_random_uuid(), dir.id, s, ev.type,
    json_build_object('event', ev.type, 'tenant', dir.tenant, 'product', dir.product, 'directory_id', dir.id,
      'data', json_build_object('id', md5(dir.id || ':u:' || (1 + s % $2::int))::uuid::text)),
    now() - ($5::int - s) * interval '1 second', now() - ($5::int - s) * interval '1 second' + interval '20 ms'
  from dsync_directories dir, generate_series(1, $5::int) s,
    lateral (select case
      when s <= $2::int then 'user.created'
      when s <= $2::int + $3::int then 'group.created'
      when s <= $2::int + $3::int + $4::int then 'group.user_added'
      else 'user.updated' end as type) ev
  where dir.id = any ($1::uuid[])`;

const TABLES = ['dsync_directories', 'dsync_users', 'dsync_groups', 'dsync_group_members', 'dsync_events'];

async function fill(c: pg.Client, ids: string[], v: DirectoryVolume): Promise<void> {
  await c.query(USERS, [ids, v.users]);
  await c.query(GROUPS, [ids, v.groups]);
  await c.query(MEMBERSHIPS, [ids, v.users, v.groups, Math.max(1, Math.round(v.memberships / v.users))]);
  await c.query(EVENTS, [ids, v.users, v.groups, v.memberships, v.events]);
  await c.query('update dsync_directories set event_seq = event_seq + $2::int where id = any ($1::uuid[])', [
    ids,
    v.events,
  ]);
}

/**
 * Loads `spec` into the database `t` serves from: the large directory (with `webhook` as its
 * webhook, if given) and the smaller ones. Returns their SCIM coordinates and the row counts.
 */
export async function loadDsyncVolume(t: VolumeTarget, spec: VolumeSpec, webhook?: string): Promise<LoadedVolume> {
  const started = performance.now();
  const tag = Math.random().toString(36).slice(2, 8);
  const large = await createDirectory(t, `volume-large-${tag}`, webhook);
  const small: VolumeDirectory[] = [];
  for (let i = 0; i < spec.small.directories; i++) small.push(await createDirectory(t, `volume-${i}-${tag}`));
  const c = new pg.Client({ connectionString: t.dsn });
  await c.connect();
  try {
    await c.query('set synchronous_commit = off');
    await c.query('begin');
    await fill(c, [large.id], spec.large);
    if (small.length)
      await fill(
        c,
        small.map((d) => d.id),
        spec.small,
      );
    await c.query('commit');
    await c.query(`vacuum (analyze) ${TABLES.join(', ')}`);
    const rows: Record<string, number> = {};
    for (const table of TABLES) {
      const { rows: r } = await c.query<{ n: number }>(`select count(*)::int as n from ${table}`);
      rows[table] = r[0]?.n ?? 0;
    }
    return { large, small, rows, seconds: (performance.now() - started) / 1000 };
  } finally {
    await c.end();
  }
}
