/**
 * Jackson's `directorySyncController` over the gatehouse services:
 * same member names, same `{data, error}` envelopes, same messages and codes.
 *
 * - `users`/`groups`/`webhookLogs.setTenantAndProduct(t, p)` binds the object it is called on (as
 *   Jackson, so two statements work) and returns a new bound object that nothing else changes (the
 *   safe form under concurrency: Jackson's shared singletons raced between requests).
 * - For compatibility only, `requests.handle` binds the shared `users` (and, for a Groups request,
 *   `groups`) to the tenant and product of the directory it served, once the request is
 *   authenticated, as Jackson's request handlers did: code written against Jackson calls
 *   `users.delete(id)` right after a SCIM request. Concurrent requests move that binding; the
 *   objects `setTenantAndProduct` returns never move.
 * - The write side (`users.create`, `groups.addUserToGroup`, …, writes.ts) emits the events of the
 *   equivalent SCIM request, in its transaction (Jackson's store writes emitted none).
 * - A callback (`requests.handle`'s, or `dsync.callback`) is the event sink, as in Jackson: it is
 *   called with each event after the commit (the objects a webhook would carry: Jackson's fields,
 *   then `id`, `seq`, `created_at`) and no webhook is queued for those changes, unless
 *   `webhooksWithCallback` keeps both. The events are stored either way (events API).
 *
 * Differences on purpose:
 * - `events.batch.process()` runs a processing pass and resolves when it is done (Jackson's
 *   returned at once); `push` and `scheduleWorker` do not exist (events are queued by the change
 *   that makes them, and the worker's timer replaces `scheduleWorker`).
 * - `google` (also as `cloudDirectory`): the state of the authorization URL is signed;
 *   `completeAuthorization({code, state})` is the callback step for embedding apps (it checks the
 *   state, exchanges the code and stores the tokens). Jackson's `createOAuth2Client` (a
 *   google-auth-library object) does not exist.
 * - `sync(callback?)` syncs every Google directory now and resolves when done, with one result per
 *   directory (`{directoryId, status, reason?, counts, durationMs}`).
 */
import { AppError, isAppError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { dsyncError, jacksonError, scimErrorBody } from './errors.ts';
import type { WebhookLogRecord } from './events/logs.ts';
import type { GroupWithMembers } from './groups/service.ts';
import type { DsyncServices } from './services.ts';
import {
  DIRECTORY_TYPES,
  type DirectorySyncRequest,
  type DirectorySyncResponse,
  type EventCallback,
  type GroupRecord,
  type PageParams,
  type WebhookEvent,
} from './types.ts';
import type { ManagedUser } from './users/service.ts';
import type { Bound } from './writes.ts';

export type ApiError = { message: string; code: number };
export type Envelope<T> = { data: T; error: null } | { data: null; error: ApiError };

async function envelope<T>(fn: () => Promise<T>): Promise<Envelope<T>> {
  try {
    return { data: await fn(), error: null };
  } catch (e) {
    return { data: null, error: jacksonError(e) };
  }
}

/** Jackson threw this when a store was used before `setTenantAndProduct`. */
function bound(b: Partial<Bound> | undefined): Bound {
  const { tenant, product } = b ?? {};
  if (typeof tenant !== 'string' || !tenant || typeof product !== 'string' || !product)
    throw dsyncError(500, 'Set tenant and product before using store.');
  return { tenant, product };
}

/** What the store objects share: the services, the callback and whether webhooks go with it. */
interface Ctx {
  s: DsyncServices;
  callback: EventCallback | undefined;
  webhooksWithCallback: boolean;
  log: Logger | undefined;
}

/** The delivery policy of a write: no webhook when a callback is the event sink (unless asked). */
const policyFor = (c: Ctx, cb: EventCallback | undefined) =>
  cb && !c.webhooksWithCallback ? { ...c.s.policy, webhooks: false } : c.s.policy;

async function notify(cb: EventCallback | undefined, events: WebhookEvent[]): Promise<void> {
  if (!cb) return;
  for (const event of events) await cb(event);
}

/**
 * A store object (`users`, `groups`, `webhookLogs`). `setTenantAndProduct(t, p)` binds this
 * object, as in Jackson (so `users.setTenantAndProduct(t, p); users.get(id)` works), and returns a
 * new object bound to `t`, `p` that nothing else changes: the safe form when requests run
 * concurrently. Each call reads the binding when it starts.
 */
function store<T>(make: (scope: () => Bound, rebind: (t: string, p: string) => T) => T, initial?: Bound): T {
  const state: { b: Bound | undefined } = { b: initial };
  const api: T = make(
    () => bound(state.b),
    (t, p) => {
      state.b = { tenant: t, product: p };
      return store(make, { tenant: t, product: p });
    },
  );
  return api;
}

type UserInput = Parameters<DsyncServices['writes']['users']['create']>[1];
type GroupInput = Parameters<DsyncServices['writes']['groups']['create']>[1];

interface UsersApi {
  setTenantAndProduct(tenant: string, product: string): UsersApi;
  create(user: UserInput): Promise<Envelope<ManagedUser>>;
  get(id: string): Promise<Envelope<ManagedUser>>;
  update(id: string, user: Omit<UserInput, 'directoryId'>): Promise<Envelope<ManagedUser>>;
  delete(id: string): Promise<Envelope<null>>;
  getAll(p?: PageParams & { directoryId?: string }): Promise<Envelope<ManagedUser[]>>;
  search(userName: string, directoryId: string): Promise<Envelope<ManagedUser[]>>;
  deleteAll(directoryId: string): Promise<void>;
}

function usersApi(c: Ctx): UsersApi {
  const { s } = c;
  const cb = c.callback;
  const p = policyFor(c, cb);
  return store<UsersApi>((scope, rebind) => ({
    setTenantAndProduct: rebind,
    create: (user) =>
      envelope(async () => {
        const r = await s.writes.users.create(scope(), user, p);
        await notify(cb, r.events);
        return r.value;
      }),
    get: (id) => envelope(() => s.users.get(scope(), id)),
    update: (id, user) =>
      envelope(async () => {
        const r = await s.writes.users.update(scope(), id, user, p);
        await notify(cb, r.events);
        return r.value;
      }),
    delete: (id) =>
      envelope(async () => {
        const r = await s.writes.users.delete(scope(), id, p);
        await notify(cb, r.events);
        return null;
      }),
    getAll: (q = {}) => envelope(() => s.users.list({ ...scope(), directoryId: q.directoryId }, q)),
    search: (userName, directoryId) => envelope(() => s.users.search(scope(), userName, directoryId)),
    deleteAll: async (directoryId) => {
      const r = await s.writes.users.deleteAll(scope(), directoryId, p);
      await notify(cb, r.events);
    },
  }));
}

interface GroupsApi {
  setTenantAndProduct(tenant: string, product: string): GroupsApi;
  create(group: GroupInput): Promise<Envelope<GroupRecord>>;
  get(id: string): Promise<Envelope<GroupWithMembers>>;
  update(id: string, group: { name?: string; raw?: Record<string, unknown> }): Promise<Envelope<GroupRecord>>;
  delete(id: string): Promise<Envelope<null>>;
  getAll(p?: PageParams & { directoryId?: string }): Promise<Envelope<GroupRecord[]>>;
  search(displayName: string, directoryId: string): Promise<Envelope<GroupRecord[]>>;
  getGroupMembers(p: PageParams & { groupId: string }): Promise<{ data: { user_id: string }[] } | Envelope<never>>;
  addUserToGroup(groupId: string, userId: string): Promise<void>;
  removeUserFromGroup(groupId: string, userId: string): Promise<void>;
  isUserInGroup(groupId: string, userId: string): Promise<boolean>;
  removeAllUsers(groupId: string): Promise<void>;
  deleteAll(directoryId: string): Promise<void>;
}

function groupsApi(c: Ctx): GroupsApi {
  const { s } = c;
  const cb = c.callback;
  const p = policyFor(c, cb);
  const w = s.writes.groups;
  return store<GroupsApi>((scope, rebind) => ({
    setTenantAndProduct: rebind,
    create: (group) =>
      envelope(async () => {
        const r = await w.create(scope(), group, p);
        await notify(cb, r.events);
        return r.value;
      }),
    get: (id) => envelope(() => s.groups.get(scope(), id)),
    update: (id, group) =>
      envelope(async () => {
        const r = await w.update(scope(), id, group, p);
        await notify(cb, r.events);
        return r.value;
      }),
    delete: (id) =>
      envelope(async () => {
        const r = await w.delete(scope(), id, p);
        await notify(cb, r.events);
        return null;
      }),
    getAll: (q = {}) => envelope(() => s.groups.list({ ...scope(), directoryId: q.directoryId }, q)),
    search: (displayName, directoryId) => envelope(() => s.groups.search(scope(), displayName, directoryId)),
    /** `{data: [{user_id}]}`: Jackson's envelope for this one has no `error` key on success. */
    getGroupMembers: async (q) => {
      const r = await envelope(() => s.groups.getMembers(scope(), q));
      return r.error ? r : { data: r.data };
    },
    addUserToGroup: async (groupId, userId) => {
      await notify(cb, (await w.addUserToGroup(scope(), groupId, userId, p)).events);
    },
    removeUserFromGroup: async (groupId, userId) => {
      await notify(cb, (await w.removeUserFromGroup(scope(), groupId, userId, p)).events);
    },
    isUserInGroup: (groupId, userId) => w.isUserInGroup(scope(), groupId, userId),
    removeAllUsers: async (groupId) => {
      await notify(cb, (await w.removeAllUsers(scope(), groupId, p)).events);
    },
    deleteAll: async (directoryId) => {
      await notify(cb, (await w.deleteAll(scope(), directoryId, p)).events);
    },
  }));
}

interface WebhookLogsApi {
  setTenantAndProduct(tenant: string, product: string): WebhookLogsApi;
  log(
    directory: { id: string; webhook?: { endpoint?: string } },
    event: unknown,
    status: number,
  ): Promise<WebhookLogRecord>;
  getAll(p?: PageParams & { directoryId?: string }): Promise<{ data: WebhookLogRecord[]; pageToken: undefined }>;
  get(id: string): Promise<WebhookLogRecord | null>;
  delete(id: string): Promise<void>;
  deleteAll(directoryId: string): Promise<void>;
}

function webhookLogsApi(c: Ctx): WebhookLogsApi {
  const { s } = c;
  return store<WebhookLogsApi>((scope, rebind) => ({
    setTenantAndProduct: rebind,
    /** The log record (bare, as Jackson). */
    log: (directory, event, status) => s.webhookLogs.log(scope(), directory, event, status),
    /** `{data, pageToken}` (no `error` key, as Jackson), newest first. */
    getAll: async (q = {}) => ({
      data: await s.webhookLogs.list({ ...scope(), directoryId: q.directoryId }, q),
      pageToken: undefined,
    }),
    /** The log, or null. */
    get: (id) => s.webhookLogs.get(scope(), id),
    delete: async (id) => {
      await s.webhookLogs.remove(scope(), id);
    },
    deleteAll: async (directoryId) => {
      scope();
      await s.webhookLogs.deleteAll(directoryId);
    },
  }));
}

export interface ControllerOptions {
  log?: Logger | undefined;
  /** Jackson's `dsync.callback`: the event sink of `requests.handle` and of the direct writes. */
  callback?: EventCallback | undefined;
  /** Also deliver webhooks when a callback receives the events (Jackson: the callback replaces them). */
  webhooksWithCallback?: boolean | undefined;
}

export function createDirectorySyncController(s: DsyncServices, o: ControllerOptions = {}) {
  const ctx: Ctx = { s, callback: o.callback, webhooksWithCallback: o.webhooksWithCallback === true, log: o.log };
  const users = usersApi(ctx);
  const groups = groupsApi(ctx);
  /** `{status, data}`; errors become SCIM error bodies, as Jackson's handler returns them. */
  async function handle(request: DirectorySyncRequest, callback?: EventCallback): Promise<DirectorySyncResponse> {
    let result: Awaited<ReturnType<DsyncServices['scim']['handle']>>;
    const cb = callback ?? o.callback;
    try {
      result = await s.scim.handle(request, {
        ...(cb && !ctx.webhooksWithCallback ? { webhooks: false } : {}),
        admitted: (d, kind) => {
          // Jackson's binding (compatibility only, see the head of this file): the shared objects
          // follow the directory of the last authenticated request, users after a Users request,
          // users and groups after a Groups request.
          users.setTenantAndProduct(d.tenant, d.product);
          if (kind === 'groups') groups.setTenantAndProduct(d.tenant, d.product);
        },
      });
    } catch (e) {
      if (!isAppError(e)) o.log?.error({ err: e }, 'directory sync request failed');
      const err = isAppError(e) ? e : new AppError({ status: 500, code: 'scim', description: 'Internal Server Error' });
      return { status: err.status, data: scimErrorBody(err) };
    }
    await notify(cb, result.events);
    return { status: result.status, data: result.data };
  }

  const google = {
    generateAuthorizationUrl: (p: { directoryId: string }) => envelope(() => s.google.generateAuthorizationUrl(p)),
    getAccessToken: (p: { directoryId: string; code: string }) => envelope(() => s.google.getAccessToken(p)),
    setToken: (p: { directoryId: string; accessToken: string; refreshToken: string }) =>
      envelope(() => s.google.setToken(p)),
    completeAuthorization: (p: { code: string; state: string; error?: string }) =>
      envelope(() => s.google.completeAuthorization(p)),
  };

  return {
    directories: {
      create: (p: Record<string, unknown>) => envelope(() => s.directories.create(p)),
      get: (id: string) => envelope(() => s.directories.get(id)),
      update: (id: string, p: Record<string, unknown>) => envelope(() => s.directories.update(id, p)),
      delete: (id: string) => envelope(async () => (await s.directories.remove(id)) ?? null),
      getByTenantAndProduct: (t: string, p: string) => envelope(() => s.directories.byTenantAndProduct(t, p)),
      getAll: (p: PageParams = {}) => envelope(() => s.directories.list(p)),
      filterBy: (p: PageParams & { product?: string; provider?: string } = {}) =>
        envelope(() => s.directories.filterBy(p)),
      getCount: () => s.directories.count(),
    },
    users,
    groups,
    webhookLogs: webhookLogsApi(ctx),
    requests: { handle },
    providers: () => ({ ...DIRECTORY_TYPES }),
    events: {
      /**
       * The events API: committed events of a directory (or of a tenant+product's directories) in
       * per-directory order after an opaque cursor: `{data, cursor, has_more, error: null}`, or
       * `{data: null, error}`. Pass `cursor` back as `after`.
       */
      list: async (p: {
        directoryId?: string;
        tenant?: string;
        product?: string;
        after?: string;
        limit?: number;
      }): Promise<
        { data: WebhookEvent[]; cursor: string; has_more: boolean; error: null } | { data: null; error: ApiError }
      > => {
        const r = await envelope(() =>
          s.feed.list({ directoryId: p?.directoryId, tenant: p?.tenant, product: p?.product }, p?.after, p?.limit),
        );
        return r.error ? r : { data: r.data.data, cursor: r.data.cursor, has_more: r.data.has_more, error: null };
      },
      batch: {
        /** One processing pass over batch mode's queue (resolves when done). */
        process: async (): Promise<void> => {
          await s.batch.process();
        },
        /** Queued events, oldest first: `{id, event, retry_count, status, created_at}`. */
        fetchNextBatch: (offset = 0, limit = 50) => s.batch.fetchNextBatch(offset, limit),
      },
    },
    /** Re-enqueues failed deliveries now (all, or one directory's): `{data: {jobs, batches}}`. */
    webhooks: { retry: (directoryId?: string) => envelope(() => s.webhooks.retry(directoryId)) },
    google,
    cloudDirectory: google,
    sync: (callback?: EventCallback) => {
      const cb = callback ?? o.callback;
      return envelope(() => s.google.syncAll(cb ? { callback: cb } : {}));
    },
  };
}

export type DirectorySyncController = ReturnType<typeof createDirectorySyncController>;
