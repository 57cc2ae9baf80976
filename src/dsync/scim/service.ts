/**
 * `requests.handle`: the one entry point for SCIM traffic, used by the
 * HTTP routes and by the library controller. Pipeline:
 *   resource type → directory (404) → secret, constant time (401; cloud directories always 401: they have no secret)
 *   → deactivated: 200 `{}` (after the secret check, not before as in Jackson) → method.
 * Every write is planned (users.ts, groups.ts: a planner, change/plan.ts) and applied by the
 * applier (change/apply.ts): one transaction that changes the data and then writes the change's
 * events; the directory row is locked only from the events' sequence numbers to the commit, so
 * writers of one directory run side by side (a create serialises with creates of the same names
 * only). The directory is read once per request, before the write, with its SCIM secret the only
 * sealed value opened. Errors are thrown as SCIM AppErrors.
 */
import type { AuditEvent } from '../../core/audit/events.ts';
import { safeEqual } from '../../core/crypto/random.ts';
import { isDataException, isForeignKeyViolation, mapDbError } from '../../core/db/errors.ts';
import { AppError } from '../../core/errors.ts';
import { metrics } from '../../core/observability/metrics.ts';
import { setActor } from '../../core/observability/scope.ts';
import type { Applier } from '../change/apply.ts';
import type { Planner } from '../change/plan.ts';
import type { DirectoriesService } from '../directories/service.ts';
import { scimError } from '../errors.ts';
import { type DeliveryPolicy, DirectoryUnavailable } from '../events/service.ts';
import type { Db } from '../tables.ts';
import { type Directory, type DirectorySyncRequest, isScimType, PAGE_LIMIT, type WebhookEvent } from '../types.ts';
import type { ScimActivity } from './activity.ts';
import { DISCOVERY_KINDS, type DiscoveryKind, discovery } from './discovery.ts';
import { parseScimFilter, type ResourceKind } from './filter.ts';
import * as groups from './groups.ts';
import * as users from './users.ts';

export interface ScimResult {
  status: number;
  data: unknown;
  /** the events the request committed, in order, as they are delivered */
  events: WebhookEvent[];
}

type Result = { status: number; data: unknown };

const MAX_START = 2 ** 31;

/** RFC 7644 §3.4.2.4: startIndex < 1 is 1; a missing, zero or oversized count is the page limit. */
function listQuery(kind: ResourceKind, q: DirectorySyncRequest['query'], max = PAGE_LIMIT): users.ListQuery {
  const start = Number(q?.startIndex);
  const count = Number(q?.count);
  const filter = typeof q?.filter === 'string' && q.filter.trim() !== '' ? q.filter : undefined;
  return {
    startIndex: Number.isInteger(start) && start >= 1 ? Math.min(start, MAX_START) : 1,
    count: Number.isInteger(count) && count > 0 && count <= max ? count : max,
    asked: Number.isInteger(count) && count > 0 ? Math.min(count, MAX_START) : 0,
    filter: filter === undefined ? undefined : parseScimFilter(filter, kind),
  };
}

const SCIM_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The SCIM endpoint of every directory (RFC 7644).
 * Long: the dispatcher, the Users and Groups requests, discovery and the write helper share the
 * directory, the page limit, the base URL and the activity recorder the closure binds.
 */
export function createScimService(o: {
  db: Db;
  directories: DirectoriesService;
  delivery: DeliveryPolicy;
  applier: Applier;
  pageLimit?: number;
  /** `dsync.external_url` without a trailing slash: discovery documents give absolute locations. */
  baseUrl?: string;
  /** Records the last request and error of each directory (the setup page's connection panel). */
  activity?: ScimActivity;
}) {
  /**
   * Runs a write: the change `plan` makes, applied with its events (change/apply.ts). A unique
   * violation is a 409; a directory deleted meanwhile is a 404, one deactivated meanwhile the
   * deactivated answer (nothing changed).
   */
  async function write(
    kind: ResourceKind,
    directory: Directory,
    plan: () => Planner<Result>,
    policy: DeliveryPolicy,
  ): Promise<ScimResult> {
    const change = (events: WebhookEvent[]): AuditEvent | undefined =>
      events.length
        ? {
            type: 'dsync.scim.change',
            actor: { kind: 'directory', id: directory.id },
            target: { kind: kind === 'users' ? 'user' : 'group', id: String(events[0]?.data?.id ?? '') },
            details: { directory_type: directory.type, events: events.map((e) => e.event) },
          }
        : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await o.applier.apply(directory, plan(), { policy, audit: change });
        return { ...r.value, events: r.events };
      } catch (e) {
        if (e instanceof DirectoryUnavailable) {
          if (e.reason === 'deactivated') return { status: 200, data: {}, events: [] };
          throw scimError(404, 'Directory configuration not found.');
        }
        // A row this write refers to (the directory, a member) was deleted by a write that committed
        // meanwhile: run again on what is committed now (the missing member is then skipped).
        if (isForeignKeyViolation(e)) {
          if (!(await o.directories.load(directory.id))) throw scimError(404, 'Directory configuration not found.');
          if (attempt < 3) continue;
        }
        throw mapDbError(e, () =>
          scimError(409, `${kind === 'users' ? 'User' : 'Group'} already exists`, 'uniqueness'),
        );
      }
    }
  }

  async function usersRequest(
    d: Directory,
    method: string,
    id: string | undefined,
    req: DirectorySyncRequest,
    policy: DeliveryPolicy,
  ) {
    if (method === 'GET' && !id) return users.listUsers(o.db, d, listQuery('users', req.query, o.pageLimit));
    if (id) {
      if (method === 'PUT') return write('users', d, () => users.replaceUser(d, id, req.body), policy);
      if (method === 'PATCH') return write('users', d, () => users.patchUser(d, id, req.body), policy);
      if (method === 'DELETE') return write('users', d, () => users.deleteUser(d, id), policy);
      const current = await users.loadUser(o.db, d, id);
      if (method === 'GET') return { status: 200, data: current.raw };
    }
    if (method === 'POST') return write('users', d, () => users.createUser(d, req.body), policy);
    throw scimError(404, 'Not found');
  }

  async function groupsRequest(
    d: Directory,
    method: string,
    id: string | undefined,
    req: DirectorySyncRequest,
    policy: DeliveryPolicy,
  ) {
    if (method === 'GET' && !id) return groups.listGroups(o.db, d, listQuery('groups', req.query, o.pageLimit));
    if (id) {
      if (method === 'PUT') return write('groups', d, () => groups.replaceGroup(d, id, req.body), policy);
      if (method === 'PATCH') return write('groups', d, () => groups.patchGroup(d, id, req.body), policy);
      if (method === 'DELETE') return write('groups', d, () => groups.deleteGroup(d, id), policy);
      const current = await groups.loadGroup(o.db, d, id);
      if (method === 'GET') return groups.getGroup(current);
    }
    if (method === 'POST') return write('groups', d, () => groups.createGroup(d, req.body), policy);
    throw scimError(404, 'Not found');
  }

  /**
   * Handles one SCIM request. Throws SCIM AppErrors (404, 401, 400, 409). `trusted` is for
   * gatehouse's own callers (the Google Workspace sync): no bearer secret is checked and cloud
   * directories are accepted. It is never set from HTTP or by the library's `requests.handle`.
   * `webhooks: false`: the events are stored but no webhook is queued (a library callback is the
   * event sink). `admitted` is called once the request is authenticated for an active directory,
   * before the write (the library's `requests.handle` binds its shared store objects there).
   */
  async function handle(
    req: DirectorySyncRequest,
    opts: {
      trusted?: boolean;
      webhooks?: boolean;
      admitted?: (directory: Directory, kind: 'users' | 'groups') => void;
    } = {},
  ): Promise<ScimResult> {
    const policy = opts.webhooks === false ? { ...o.delivery, webhooks: false } : o.delivery;
    const seen: { type?: string; directoryId?: string } = {};
    /** What the directory's connection panel shows: authenticated requests of identity providers only. */
    const noted = (status: number, error?: string) => {
      if (seen.directoryId && !opts.trusted)
        o.activity?.note({
          directoryId: seen.directoryId,
          method: String(req.method ?? '').toUpperCase(),
          resource: String(req.resourceType ?? ''),
          status,
          error,
        });
    };
    const count = (status: number) =>
      metrics.scimOperations.inc({
        directory_type: seen.type ?? 'unknown',
        resource: ['users', 'groups'].includes(String(req.resourceType).toLowerCase())
          ? String(req.resourceType).toLowerCase()
          : 'other',
        operation: SCIM_METHODS.has(String(req.method).toUpperCase()) ? String(req.method).toUpperCase() : 'OTHER',
        outcome: String(status),
      });
    try {
      const r = await dispatch(req, opts.trusted === true, policy, seen, opts.admitted);
      count(r.status);
      noted(r.status);
      return r;
    } catch (e) {
      const status = e instanceof AppError ? e.status : isDataException(e) ? 400 : 500;
      count(status);
      noted(
        status,
        e instanceof AppError ? e.description : status === 400 ? 'A value cannot be stored.' : 'Internal error',
      );
      // A value PostgreSQL refuses (out of range, bad encoding) is the client's: 400, not 500.
      if (isDataException(e))
        throw scimError(400, 'The request contains a value that cannot be stored.', 'invalidValue');
      throw e;
    }
  }

  async function dispatch(
    req: DirectorySyncRequest,
    trusted: boolean,
    policy: DeliveryPolicy,
    seen: { type?: string; directoryId?: string },
    admitted?: (directory: Directory, kind: 'users' | 'groups') => void,
  ): Promise<ScimResult> {
    const kind = String(req.resourceType ?? '').toLowerCase();
    const resource = kind === 'users' || kind === 'groups' ? kind : undefined;
    if (!resource && !DISCOVERY_KINDS.has(kind)) return { status: 404, data: {}, events: [] };
    const directory = await o.directories.loadKept(String(req.directoryId ?? ''));
    if (!directory) throw scimError(404, 'Directory configuration not found.');
    const secret = typeof req.apiSecret === 'string' ? req.apiSecret : '';
    const ok = safeEqual(directory.scim.secret, secret) && isScimType(directory.type) && directory.scim.secret !== '';
    seen.type = directory.type;
    if (!ok && !trusted) throw scimError(401, 'Unauthorized');
    seen.directoryId = directory.id;
    setActor({ kind: 'directory', id: directory.id });
    if (directory.deactivated) return { status: 200, data: {}, events: [] };
    const method = String(req.method ?? '').toUpperCase();
    const id = typeof req.resourceId === 'string' && req.resourceId !== '' ? req.resourceId : undefined;
    if (!resource) {
      // A discovery resource (checked above).
      const base = `${o.baseUrl ?? ''}${directory.scim.path}`;
      const r = discovery(kind as DiscoveryKind, method, id, base, o.pageLimit ?? PAGE_LIMIT);
      return { ...r, events: [] };
    }
    admitted?.(directory, resource);
    if (id?.includes('\u0000')) throw scimError(404, resource === 'users' ? 'User not found' : 'Group not found');
    const r =
      resource === 'users'
        ? await usersRequest(directory, method, id, req, policy)
        : await groupsRequest(directory, method, id, req, policy);
    return 'events' in r ? (r as ScimResult) : { ...r, events: [] };
  }

  return { handle };
}

export type ScimService = ReturnType<typeof createScimService>;
