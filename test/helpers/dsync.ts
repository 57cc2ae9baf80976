/**
 * Directory-sync test helpers: a server with an API key, a v1 API client, a SCIM client bound to a
 * directory (path and bearer secret from the directory record, as an identity provider gets them),
 * and direct reads of what is stored.
 */
import type { ControllerOptions, Controllers } from 'gatehouse';
import { sql } from 'kysely';
import type { DirectoryRecord, DirectorySyncEvent } from '../../src/dsync/types.ts';
import { startTestServer, TEST_SECRET, type TestServer, type TestServerOptions } from './apps.ts';
import type { JsonBody } from './json.ts';

export const API_KEY = 'test-dsync-api-key-0123456789';

/** A test server whose dsync API accepts API_KEY, with these config overrides (and other options). */
export function startDsyncServer(
  overrides: Record<string, unknown> = {},
  opts: Omit<TestServerOptions, 'overrides'> = {},
): Promise<TestServer> {
  return startTestServer({ ...opts, overrides: { 'dsync.api_keys': [API_KEY], ...overrides } });
}

/** The library's controllers (`controllers()`) on a test server's database, with its encryption key. */
export async function libraryOn(s: TestServer, options: Partial<ControllerOptions> = {}): Promise<Controllers> {
  const { controllers } = await import('gatehouse');
  return controllers({
    externalUrl: 'https://x.example',
    db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET },
    ...options,
  });
}

/** The members of an event as the events API lists it and a webhook delivers it, in Jackson's order. */
export const EVENT_KEYS = ['event', 'tenant', 'product', 'directory_id', 'data', 'id', 'seq', 'created_at'];

export interface Reply<T = JsonBody> {
  status: number;
  body: T;
  headers: Headers;
}

async function call(url: string, method: string, body: unknown, headers: Record<string, string>): Promise<Reply> {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The v1 management API on the admin listener. */
export function v1(s: TestServer, key: string | null = API_KEY) {
  return (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(`${s.adminUrl}/api/v1/dsync${path}`, method, body, {
      ...(key !== null ? { authorization: `Api-Key ${key}` } : {}),
      ...headers,
    });
}

export async function createDirectory(s: TestServer, input: Record<string, unknown> = {}): Promise<DirectoryRecord> {
  const r = await v1(s)('POST', '', { tenant: 'acme', product: 'crm', type: 'okta-scim-v2', ...input });
  if (r.status !== 201) throw new Error(`create directory: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data as DirectoryRecord;
}

/**
 * A SCIM client as an identity provider configures it: the base URL is `scim.endpoint` (for Entra
 * ID it carries `/?aadOptscim062020`, and the resource path goes before the query string).
 */
export function scimClient(s: TestServer, dir: DirectoryRecord, secret: string | null = dir.scim.secret) {
  const endpoint = dir.scim.endpoint ?? '';
  const [base, query] = endpoint.split('/?');
  const local = new URL(base ?? '');
  return (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const [p, q] = path.split('?');
    const qs = [query, q].filter(Boolean).join('&');
    const url = `${s.publicUrl}${local.pathname}${p}${qs ? `?${qs}` : ''}`;
    return call(url, method, body, {
      ...(secret !== null ? { authorization: `Bearer ${secret}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
      ...headers,
    });
  };
}

/** A delivered event (webhook body, callback argument) without gatehouse's id/seq/created_at: Jackson's object. */
export function jacksonEvent(e: DirectorySyncEvent & { id?: string; seq?: number; created_at?: string }) {
  const { id: _id, seq: _seq, created_at: _at, ...rest } = e;
  return rest;
}

/** Stored events of a directory, in sequence order. */
export async function storedEvents(
  s: TestServer,
  directoryId: string,
): Promise<Array<DirectorySyncEvent & { seq: number }>> {
  const { rows } = await sql<{ seq: number; payload: DirectorySyncEvent }>`
    select seq, payload from dsync_events where directory_id = ${directoryId} order by seq`.execute(s.container.db);
  return rows.map((r) => ({ ...r.payload, seq: Number(r.seq) }));
}

/** Runs `change`; returns its value and the events it stored for the directory, in order, without `seq`. */
export async function withStoredEvents<T>(
  s: TestServer,
  directoryId: string,
  change: () => Promise<T>,
): Promise<{ value: T; events: DirectorySyncEvent[] }> {
  const before = (await storedEvents(s, directoryId)).length;
  const value = await change();
  const events = (await storedEvents(s, directoryId)).slice(before).map(({ seq: _seq, ...e }) => e);
  return { value, events };
}

/** How many users are stored under a directory. */
export async function userCount(s: TestServer, directoryId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from dsync_users where directory_id = ${directoryId}`.execute(s.container.db);
  return Number(rows[0]?.n);
}

/** A snapshot of everything stored under a directory (users, groups, memberships, events). */
export async function snapshot(s: TestServer, directoryId: string) {
  const db = s.container.db;
  const [users, groups, members, events] = await Promise.all([
    sql`select * from dsync_users where directory_id = ${directoryId} order by id`.execute(db),
    sql`select * from dsync_groups where directory_id = ${directoryId} order by id`.execute(db),
    sql`select group_id, user_id from dsync_group_members where directory_id = ${directoryId} order by 1, 2`.execute(
      db,
    ),
    sql`select count(*)::int as n from dsync_events where directory_id = ${directoryId}`.execute(db),
  ]);
  return JSON.stringify({ users: users.rows, groups: groups.rows, members: members.rows, events: events.rows });
}

export async function memberIds(s: TestServer, directoryId: string, groupId: string): Promise<string[]> {
  const { rows } = await sql<{ user_id: string }>`
    select user_id from dsync_group_members where directory_id = ${directoryId} and group_id = ${groupId} order by user_id`.execute(
    s.container.db,
  );
  return rows.map((r) => r.user_id);
}
