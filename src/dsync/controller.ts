/**
 * Jackson's `directorySyncController` (spec/dsync.md §1.2–§1.8) over the gatehouse services:
 * same member names, same `{data, error}` envelopes, same messages and codes.
 *
 * Differences on purpose:
 * - `users`/`groups`/`webhookLogs.setTenantAndProduct(t, p)` return a new bound object on every
 *   call and change nothing shared (Jackson mutated singletons, a race between requests, Q13);
 *   the callback of `requests.handle` is per call too.
 * - `requests.handle` calls the callback with each event after the change has committed.
 * - Callbacks receive the events as they are delivered (Jackson's fields, then `id`, `seq`,
 *   `created_at`); webhook delivery happens as well when the directory has a webhook (in Jackson a
 *   callback replaced it).
 * - `events.batch.process()` runs a processing pass and resolves when it is done (Jackson's
 *   returned at once); `push` and `scheduleWorker` do not exist (events are queued by the change
 *   that makes them, and the worker's timer replaces `scheduleWorker`).
 * - `google` (also as the seed's `cloudDirectory`): the state of the authorization URL is signed;
 *   `completeAuthorization({code, state})` is the callback step for embedding apps (it checks the
 *   state, exchanges the code and stores the tokens). Jackson's `createOAuth2Client` (a
 *   google-auth-library object) does not exist.
 * - `sync(callback?)` syncs every Google directory now and resolves when done, with one result per
 *   directory (`{directoryId, status, reason?, counts, durationMs}`).
 */
import { scimErrorBody } from '../core/http/errors.ts';
import { AppError, isAppError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { dsyncError, jacksonError } from './errors.ts';
import type { DsyncServices } from './index.ts';
import {
  DIRECTORY_TYPES,
  type DirectorySyncRequest,
  type DirectorySyncResponse,
  type EventCallback,
  type PageParams,
} from './types.ts';

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
function bound(tenant: unknown, product: unknown): { tenant: string; product: string } {
  if (typeof tenant !== 'string' || !tenant || typeof product !== 'string' || !product)
    throw dsyncError(500, 'Set tenant and product before using store.');
  return { tenant, product };
}

function usersApi(s: DsyncServices, tenant?: unknown, product?: unknown) {
  const scope = () => bound(tenant, product);
  return {
    setTenantAndProduct: (t: string, p: string) => usersApi(s, t, p),
    get: (id: string) => envelope(() => s.users.get(scope(), id)),
    getAll: (p: PageParams & { directoryId?: string } = {}) =>
      envelope(() => s.users.list({ ...scope(), directoryId: p.directoryId }, p)),
    search: (userName: string, directoryId: string) => envelope(() => s.users.search(scope(), userName, directoryId)),
  };
}

function groupsApi(s: DsyncServices, tenant?: unknown, product?: unknown) {
  const scope = () => bound(tenant, product);
  return {
    setTenantAndProduct: (t: string, p: string) => groupsApi(s, t, p),
    get: (id: string) => envelope(() => s.groups.get(scope(), id)),
    getAll: (p: PageParams & { directoryId?: string } = {}) =>
      envelope(() => s.groups.list({ ...scope(), directoryId: p.directoryId }, p)),
    search: (displayName: string, directoryId: string) =>
      envelope(() => s.groups.search(scope(), displayName, directoryId)),
    /** `{data: [{user_id}]}`: Jackson's envelope for this one has no `error` key on success. */
    getGroupMembers: async (p: PageParams & { groupId: string }) => {
      const r = await envelope(() => s.groups.getMembers(scope(), p));
      return r.error ? r : { data: r.data };
    },
  };
}

function webhookLogsApi(s: DsyncServices, tenant?: unknown, product?: unknown) {
  const scope = () => bound(tenant, product);
  return {
    setTenantAndProduct: (t: string, p: string) => webhookLogsApi(s, t, p),
    /** `{data, pageToken}` (no `error` key, as Jackson), newest first. */
    getAll: async (p: PageParams & { directoryId?: string } = {}) => ({
      data: await s.webhookLogs.list({ ...scope(), directoryId: p.directoryId }, p),
      pageToken: undefined,
    }),
    /** The log, or null. */
    get: (id: string) => s.webhookLogs.get(scope(), id),
    delete: async (id: string): Promise<void> => {
      await s.webhookLogs.remove(scope(), id);
    },
    deleteAll: async (directoryId: string): Promise<void> => {
      await s.webhookLogs.deleteAll(directoryId);
    },
  };
}

export function createDirectorySyncController(s: DsyncServices, o: { log?: Logger; callback?: EventCallback } = {}) {
  /** `{status, data}`; errors become SCIM error bodies, as Jackson's handler returns them. */
  async function handle(request: DirectorySyncRequest, callback?: EventCallback): Promise<DirectorySyncResponse> {
    let result: Awaited<ReturnType<DsyncServices['scim']['handle']>>;
    try {
      result = await s.scim.handle(request);
    } catch (e) {
      if (!isAppError(e)) o.log?.error({ err: e }, 'directory sync request failed');
      const err = isAppError(e) ? e : new AppError({ status: 500, code: 'scim', description: 'Internal Server Error' });
      return { status: err.status, data: scimErrorBody(err) };
    }
    const cb = callback ?? o.callback;
    if (cb) for (const event of result.events) await cb(event);
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
    users: usersApi(s),
    groups: groupsApi(s),
    webhookLogs: webhookLogsApi(s),
    requests: { handle },
    providers: () => ({ ...DIRECTORY_TYPES }),
    events: {
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
