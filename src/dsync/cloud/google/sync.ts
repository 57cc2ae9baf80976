/**
 * One Google Workspace sync of one directory (spec/dsync.md §5.4): users, then groups, then each
 * group's members, paged from the Directory API and compared with what is stored.
 *
 * - Every page (at most 200 objects) and every chunk of deletions or membership changes (at most
 *   500) is its own transaction: the directory row is locked, the changes are written, their events
 *   are persisted, the transaction commits, and only then is the callback called with each event.
 *   No transaction spans a whole directory, however large.
 * - Nothing is deleted unless the whole listing arrived: users missing from Google are deleted after
 *   the last users page, groups after the last groups page. A run that fails on the way leaves
 *   every committed page consistent (data and events together) and the next run carries on from
 *   what is stored.
 * - Only `USER` members become memberships; nested groups (`GROUP`) and `CUSTOMER` members are
 *   ignored (Jackson took a nested group's id for a user id).
 * - A lease in dsync_cloud_syncs makes sure one directory is never synced twice at the same time,
 *   whoever starts the run (worker job, CLI, library); a run that cannot take it is skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../core/clock.ts';
import { type Db, type Executor, withTx } from '../../../core/db/tx.ts';
import { isAppError } from '../../../core/errors.ts';
import type { Logger } from '../../../core/log.ts';
import type { DirectoriesService } from '../../directories/service.ts';
import { type EventBatch, eventBatch, persistEvents } from '../../events/service.ts';
import { claimLease, releaseLease, renewLease } from '../../store/cloud-syncs.ts';
import { listMemberIds } from '../../store/members.ts';
import { listGroupIds } from '../../store/groups.ts';
import { listUserIds } from '../../store/users.ts';
import type { Directory, DirectorySyncEvent, DsyncGroup, DsyncUser, EventCallback } from '../../types.ts';
import type { TokenSource } from './auth.ts';
import { type GoogleClient, googleError, isGoogleError, type ListKind, type ListPage, PAGE_SIZE } from './client.ts';
import { mainDomain, toGroup, toUser, unstorable } from './mapping.ts';
import type { GoogleGroup, GoogleUser } from './schemas.ts';
import * as writes from './writes.ts';

const LEASE_MS = 10 * 60_000;
const CHUNK = 500;
const DEFERRED_ROUNDS = 5;

export interface SyncCounts {
  pages: number;
  users: { created: number; updated: number; deleted: number; skipped: number };
  groups: { created: number; updated: number; deleted: number; skipped: number };
  /** `notUsers`: nested groups and CUSTOMER members; `unknownUsers`: USER members that are no user of the directory */
  memberships: { added: number; removed: number; notUsers: number; unknownUsers: number };
  events: number;
}

export type SyncPhase = 'users' | 'groups' | 'members';

export interface SyncProgress {
  directoryId: string;
  phase: SyncPhase;
  /** objects of this phase received so far (members: groups done) */
  done: number;
  /** known total of this phase; while more pages follow, what is known plus one page */
  total: number;
  counts: SyncCounts;
}

export interface SyncResult {
  directoryId: string;
  status: 'completed' | 'failed' | 'stopped' | 'skipped';
  /** why a run was skipped, stopped or failed (never a token or an address) */
  reason?: string;
  counts: SyncCounts;
  durationMs: number;
}

export interface SyncOptions {
  /** Called with each event after its transaction committed (Jackson's `sync(callback)`). */
  callback?: EventCallback;
  onProgress?: (p: SyncProgress) => void;
}

export interface GoogleSyncDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  directories: DirectoriesService;
  client: GoogleClient;
  tokens: (d: Directory) => TokenSource;
  /** Minimum time between two `info` progress lines of one run (default 10 s). */
  progressLogMs?: number;
}

/** The run ends early without being a failure: the directory was deleted or deactivated, the lease was lost. */
class SyncStop extends Error {}

interface Run {
  directory: Directory;
  owner: string;
  tokens: TokenSource;
  opts: SyncOptions;
  counts: SyncCounts;
  lastLog: number;
}

export const emptyCounts = (): SyncCounts => ({
  pages: 0,
  users: { created: 0, updated: 0, deleted: 0, skipped: 0 },
  groups: { created: 0, updated: 0, deleted: 0, skipped: 0 },
  memberships: { added: 0, removed: 0, notUsers: 0, unknownUsers: 0 },
  events: 0,
});

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function createGoogleSync(o: GoogleSyncDeps) {
  const log = o.log.child({ component: 'dsync.google' });
  const progressLogMs = o.progressLogMs ?? 10_000;
  const leaseEnd = () => new Date(o.clock.now().getTime() + LEASE_MS);

  /** One transaction of the run: lock the directory, write, persist the events; then the callback. */
  async function commit<T>(run: Run, fn: (trx: Executor, batch: EventBatch) => Promise<T>): Promise<T> {
    const r = await withTx(o.db, async (trx) => {
      const d = await o.directories.lock(trx, run.directory.id);
      if (!d) throw new SyncStop('the directory was deleted during the sync');
      if (d.deactivated) throw new SyncStop('the directory was deactivated during the sync');
      const batch = eventBatch(d);
      const value = await fn(trx, batch);
      await persistEvents(trx, batch);
      return { value, events: batch.events };
    });
    run.counts.events += r.events.length;
    for (const e of r.events) await emit(run, e);
    return r.value;
  }

  async function emit(run: Run, e: DirectorySyncEvent) {
    try {
      await run.opts.callback?.(e);
    } catch (err) {
      log.warn({ directoryId: run.directory.id, event: e.event, err }, 'google sync: the event callback failed');
    }
  }

  async function renew(run: Run) {
    if (!(await renewLease(o.db, run.directory.id, run.owner, leaseEnd())))
      throw new SyncStop('the sync lease was lost (the directory was deleted, or another run took over)');
  }

  function progress(run: Run, phase: SyncPhase, done: number, total: number) {
    run.opts.onProgress?.({ directoryId: run.directory.id, phase, done, total, counts: run.counts });
    const now = o.clock.now().getTime();
    const fields = { directoryId: run.directory.id, phase, done, pages: run.counts.pages, events: run.counts.events };
    if (now - run.lastLog >= progressLogMs) {
      run.lastLog = now;
      log.info(fields, 'google sync progress');
    } else log.debug(fields, 'google sync progress');
  }

  /** A Google call with the run's access token; on a 401 the token is refreshed (and stored) once. */
  async function call<T>(run: Run, fn: (token: string) => Promise<T>): Promise<T> {
    try {
      return await fn(await run.tokens.current());
    } catch (e) {
      if (!isGoogleError(e, 'unauthorized')) throw e;
    }
    return fn(await run.tokens.refresh());
  }

  async function* list(run: Run, kind: ListKind, groupKey?: string): AsyncGenerator<ListPage> {
    const tokens = new Set<string>();
    let pageToken: string | undefined;
    do {
      const p = { ...(groupKey ? { groupKey } : {}), ...(pageToken ? { pageToken } : {}) };
      const page = await call(run, (t) => o.client.listPage(kind, t, p));
      run.counts.pages++;
      yield page;
      pageToken = page.nextPageToken;
      if (pageToken && tokens.has(pageToken))
        throw googleError('bad_response', `Google's Directory API repeated a page token while listing ${kind}`);
      if (pageToken) tokens.add(pageToken);
    } while (pageToken);
  }

  /** Deletes what is stored but was not listed, in id order, 500 per transaction. */
  async function deleteMissing(run: Run, kind: 'users' | 'groups', seen: Set<string>) {
    const id = run.directory.id;
    let after = '';
    for (;;) {
      const ids =
        kind === 'users' ? await listUserIds(o.db, id, after, CHUNK) : await listGroupIds(o.db, id, after, CHUNK);
      if (!ids.length) return;
      after = ids[ids.length - 1] as string;
      const gone = ids.filter((x) => !seen.has(x));
      if (!gone.length) continue;
      const n = await commit(run, (trx, b) =>
        kind === 'users' ? writes.deleteUsers(trx, id, b, gone) : writes.deleteGroups(trx, id, b, gone),
      );
      run.counts[kind].deleted += n;
      await renew(run);
    }
  }

  function addUserWrites(run: Run, r: writes.UserWrites) {
    run.counts.users.created += r.created;
    run.counts.users.updated += r.updated;
  }

  /** Deferred users (a primary email still held by another user) once the other users moved on. */
  async function retryDeferred(run: Run, pending: DsyncUser[]) {
    const id = run.directory.id;
    for (let round = 0; pending.length && round < DEFERRED_ROUNDS; round++) {
      const next: DsyncUser[] = [];
      for (const chunk of chunks(pending, 200)) {
        const r = await commit(run, (trx, b) => writes.writeUsers(trx, id, b, chunk));
        addUserWrites(run, r);
        next.push(...r.deferred);
      }
      const stuck = next.length === pending.length;
      pending = next;
      if (stuck) break;
    }
    if (!pending.length) return;
    const last = pending;
    const r = await commit(run, (trx, b) => writes.writeUserCycle(trx, id, b, last));
    addUserWrites(run, r);
    if (r.deferred.length) {
      run.counts.users.skipped += r.deferred.length;
      log.warn(
        { directoryId: id, users: r.deferred.map((u) => u.id).slice(0, 20), count: r.deferred.length },
        'google sync: users not stored, their primary email is held by another user of the directory',
      );
    }
  }

  async function syncUsers(run: Run) {
    const id = run.directory.id;
    const seen = new Set<string>();
    const domains = new Map<string, number>();
    const deferred: DsyncUser[] = [];
    for await (const page of list(run, 'users')) {
      const batch: DsyncUser[] = [];
      for (const item of page.items) {
        if (seen.has(item.id)) continue;
        seen.add(item.id);
        const why = unstorable(item);
        if (why) {
          run.counts.users.skipped++;
          log.warn({ directoryId: id, userId: item.id, reason: why }, 'google sync: user not stored');
          continue;
        }
        const u = toUser(id, item as GoogleUser);
        const domain = u.email?.split('@')[1]?.toLowerCase();
        if (domain) domains.set(domain, (domains.get(domain) ?? 0) + 1);
        batch.push(u);
      }
      if (batch.length) {
        const r = await commit(run, (trx, b) => writes.writeUsers(trx, id, b, batch));
        addUserWrites(run, r);
        deferred.push(...r.deferred);
      }
      progress(run, 'users', seen.size, seen.size + (page.nextPageToken ? PAGE_SIZE : 0));
      await renew(run);
    }
    await deleteMissing(run, 'users', seen);
    await retryDeferred(run, deferred);
    // The Workspace's domain, for the record, unless the operator set one.
    if (!run.directory.googleDomain && domains.size)
      await o.directories.update(id, { google_domain: mainDomain(domains) }).catch((e) => {
        if (!isAppError(e)) throw e;
      });
    log.info({ directoryId: id, listed: seen.size, ...run.counts.users }, 'google sync: users done');
  }

  /** Returns the ids of the groups stored, in Google's order (the members phase walks them). */
  async function syncGroups(run: Run): Promise<string[]> {
    const id = run.directory.id;
    const seen = new Set<string>();
    const order: string[] = [];
    for await (const page of list(run, 'groups')) {
      const batch: DsyncGroup[] = [];
      for (const item of page.items) {
        if (seen.has(item.id)) continue;
        seen.add(item.id);
        const why = unstorable(item);
        if (why) {
          run.counts.groups.skipped++;
          log.warn({ directoryId: id, groupId: item.id, reason: why }, 'google sync: group not stored');
          continue;
        }
        batch.push(toGroup(id, item as GoogleGroup));
        order.push(item.id);
      }
      if (batch.length) {
        const r = await commit(run, (trx, b) => writes.writeGroups(trx, id, b, batch));
        run.counts.groups.created += r.created;
        run.counts.groups.updated += r.updated;
      }
      progress(run, 'groups', seen.size, seen.size + (page.nextPageToken ? PAGE_SIZE : 0));
      await renew(run);
    }
    await deleteMissing(run, 'groups', seen);
    log.info({ directoryId: id, listed: seen.size, ...run.counts.groups }, 'google sync: groups done');
    return order;
  }

  /** The USER members of a group at Google, in Google's order; undefined when the group is gone there. */
  async function googleMembers(run: Run, groupId: string): Promise<string[] | undefined> {
    const ids: string[] = [];
    const seen = new Set<string>();
    try {
      for await (const page of list(run, 'members', groupId))
        for (const m of page.items) {
          if (m.type !== 'USER') run.counts.memberships.notUsers++;
          else if (!seen.has(m.id)) {
            seen.add(m.id);
            ids.push(m.id);
          }
        }
    } catch (e) {
      if (!isGoogleError(e, 'not_found')) throw e;
      log.info({ directoryId: run.directory.id, groupId }, 'google sync: group deleted at Google meanwhile, skipped');
      return undefined;
    }
    return ids;
  }

  async function syncMembers(run: Run, groupIds: string[]) {
    const id = run.directory.id;
    for (const [i, groupId] of groupIds.entries()) {
      const wanted = await googleMembers(run, groupId);
      if (wanted) {
        const want = new Set(wanted);
        const have = await listMemberIds(o.db, id, groupId);
        const has = new Set(have);
        for (const chunk of chunks(have.filter((x) => !want.has(x))))
          run.counts.memberships.removed += await commit(run, (trx, b) =>
            writes.removeMembers(trx, id, b, groupId, chunk),
          );
        for (const chunk of chunks(wanted.filter((x) => !has.has(x)))) {
          const n = await commit(run, (trx, b) => writes.addMembers(trx, id, b, groupId, chunk));
          run.counts.memberships.added += n;
          run.counts.memberships.unknownUsers += chunk.length - n;
        }
      }
      progress(run, 'members', i + 1, groupIds.length);
      await renew(run);
    }
    log.info({ directoryId: id, groups: groupIds.length, ...run.counts.memberships }, 'google sync: members done');
  }

  /**
   * Syncs one directory. Never throws for Google's failures or a revoked authorization (the result
   * says `failed`, and it is logged); throws only unexpected errors (the database), after
   * releasing the lease.
   */
  async function syncDirectory(directoryId: string, opts: SyncOptions = {}): Promise<SyncResult> {
    const started = performance.now();
    const counts = emptyCounts();
    const done = (status: SyncResult['status'], reason = ''): SyncResult => ({
      directoryId,
      status,
      ...(reason ? { reason } : {}),
      counts,
      durationMs: Math.round(performance.now() - started),
    });
    const d = await o.directories.load(directoryId);
    if (!d) return done('skipped', 'the directory does not exist');
    if (d.type !== 'google') return done('skipped', 'the directory is not a Google directory');
    if (d.deactivated) return done('skipped', 'the directory is deactivated');
    if (!d.googleAccessToken && !d.googleRefreshToken) return done('skipped', 'the directory is not authorized yet');
    const owner = randomUUID();
    if (!(await claimLease(o.db, d.id, owner, o.clock.now(), leaseEnd()))) {
      log.info({ directoryId: d.id }, 'google sync skipped: a run of this directory is in progress');
      return done('skipped', 'a sync of this directory is already running');
    }
    const run: Run = { directory: d, owner, tokens: o.tokens(d), opts, counts, lastLog: 0 };
    log.info({ directoryId: d.id }, 'google sync started');
    let status: 'completed' | 'failed' | 'stopped' = 'completed';
    let reason = '';
    try {
      await syncUsers(run);
      await syncMembers(run, await syncGroups(run));
    } catch (e) {
      if (e instanceof SyncStop) [status, reason] = ['stopped', e.message];
      else if (isGoogleError(e)) [status, reason] = ['failed', e.description];
      else {
        log.error({ directoryId: d.id, err: e }, 'google sync failed: internal error');
        await release(run, 'failed', 'internal error (see the logs)');
        throw e;
      }
    }
    await release(run, status, reason);
    const result = done(status, reason);
    const fields = { directoryId: d.id, durationMs: result.durationMs, ...counts };
    if (status === 'completed') log.info(fields, 'google sync completed');
    else if (status === 'stopped') log.warn({ ...fields, reason }, `google sync stopped: ${reason}`);
    else log.error({ ...fields, reason }, `google sync failed: ${reason}`);
    return result;
  }

  async function release(run: Run, status: 'completed' | 'failed' | 'stopped', error: string) {
    await releaseLease(o.db, run.directory.id, run.owner, {
      status,
      finishedAt: o.clock.now(),
      error,
      stats: run.counts,
    });
  }

  return { syncDirectory };
}

export type GoogleSync = ReturnType<typeof createGoogleSync>;
