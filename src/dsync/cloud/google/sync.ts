/**
 * One Google Workspace sync of one directory: users, then groups, then each
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
 * - With chosen groups (`google_groups`: emails or ids), the groups and their members are listed
 *   first, and only those groups, their USER members and their memberships are kept; users and
 *   groups stored before that are not among them are deleted like those gone from Google.
 * - A lease in dsync_cloud_syncs makes sure one directory is never synced twice at the same time,
 *   whoever starts the run (worker job, CLI, library); a run that cannot take it is skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../core/clock.ts';
import { isAppError } from '../../../core/errors.ts';
import type { Logger } from '../../../core/log.ts';
import type { Applier } from '../../change/apply.ts';
import type { DirectoriesService } from '../../directories/service.ts';
import type { DeliveryPolicy } from '../../events/service.ts';
import { claimLease } from '../../store/cloud-syncs.ts';
import { listMemberIds } from '../../store/members.ts';
import type { Db } from '../../tables.ts';
import type { Directory, DsyncGroup, DsyncUser } from '../../types.ts';
import type { TokenSource } from './auth.ts';
import { type GoogleClient, isGoogleError, PAGE_SIZE } from './client.ts';
import { mainDomain, toGroup, toUser, unstorable } from './mapping.ts';
import {
  chunks,
  emptyCounts,
  leaseEnd,
  openRun,
  type Run,
  type SyncCounts,
  type SyncOptions,
  SyncStop,
} from './run.ts';
import type { GoogleGroup, GoogleUser } from './schemas.ts';
import * as writes from './writes.ts';

export type { SyncCounts, SyncOptions, SyncProgress } from './run.ts';
export { emptyCounts } from './run.ts';

const DEFERRED_ROUNDS = 5;

/** The memberships a membership change added or removed (the keys its writes returned). */
const changed = (r: { written: string[][] }) => r.written.reduce((n, keys) => n + keys.length, 0);

/** What a sync limited to chosen groups keeps: those groups (Google ids), their USER members, each group's members. */
interface Scope {
  groups: Set<string>;
  users: Set<string>;
  members: Map<string, string[]>;
}

export interface SyncResult {
  directoryId: string;
  status: 'completed' | 'failed' | 'stopped' | 'skipped';
  /** why a run was skipped, stopped or failed (never a token or an address) */
  reason?: string;
  counts: SyncCounts;
  durationMs: number;
}

export interface GoogleSyncDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  directories: DirectoriesService;
  client: GoogleClient;
  tokens: (d: Directory) => TokenSource;
  /** How the events of a sync are delivered (webhooks; see events/service.ts). */
  delivery: DeliveryPolicy;
  /** Applies the sync's changes (change/apply.ts). */
  applier: Applier;
  /** Minimum time between two `info` progress lines of one run (default 10 s). */
  progressLogMs?: number;
}

/**
 * One sync of a Google Workspace directory: users, then groups, then each group's members, written
 * in chunks with their events (run.ts holds the lease and the chunks).
 * Long: the three passes share the run, its deferred users and its counts.
 */
export function createGoogleSync(o: GoogleSyncDeps) {
  const log = o.log.child({ component: 'dsync.google' });
  const runDeps = { ...o, log };

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
        const r = (await run.commit((trx) => writes.writeUsers(trx, id, chunk))).value;
        addUserWrites(run, r);
        next.push(...r.deferred);
      }
      const stuck = next.length === pending.length;
      pending = next;
      if (stuck) break;
    }
    if (!pending.length) return;
    const last = pending;
    const r = (await run.commit((trx) => writes.writeUserCycle(trx, id, last))).value;
    addUserWrites(run, r);
    if (r.deferred.length) {
      run.counts.users.skipped += r.deferred.length;
      log.warn(
        { directoryId: id, users: r.deferred.map((u) => u.id).slice(0, 20), count: r.deferred.length },
        'google sync: users not stored, their primary email is held by another user of the directory',
      );
    }
  }

  /**
   * With chosen groups (`google_groups`): the chosen groups at Google, by id, and their USER members,
   * listed before anything is written; the users passed then keeps only those members.
   */
  async function chosenScope(run: Run): Promise<Scope | undefined> {
    const chosen = new Set(run.directory.googleGroups.map((g) => g.toLowerCase()));
    if (!chosen.size) return undefined;
    const groups = new Set<string>();
    for await (const page of run.list('groups'))
      for (const g of page.items) {
        const email = typeof g.email === 'string' ? g.email.toLowerCase() : '';
        if (chosen.has(g.id.toLowerCase()) || (email && chosen.has(email))) groups.add(g.id);
      }
    const members = new Map<string, string[]>();
    const users = new Set<string>();
    for (const groupId of groups) {
      const ids = await googleMembers(run, groupId);
      if (!ids) continue;
      members.set(groupId, ids);
      for (const u of ids) users.add(u);
      await run.renew();
    }
    log.info(
      { directoryId: run.directory.id, chosen: chosen.size, groups: groups.size, users: users.size },
      'google sync: limited to the chosen groups',
    );
    return { groups, users, members };
  }

  async function syncUsers(run: Run, scope?: Scope) {
    const id = run.directory.id;
    const seen = new Set<string>();
    const domains = new Map<string, number>();
    const deferred: DsyncUser[] = [];
    for await (const page of run.list('users')) {
      const batch: DsyncUser[] = [];
      for (const item of page.items) {
        if (seen.has(item.id) || (scope && !scope.users.has(item.id))) continue;
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
        const r = (await run.commit((trx) => writes.writeUsers(trx, id, batch))).value;
        addUserWrites(run, r);
        deferred.push(...r.deferred);
      }
      run.progress('users', seen.size, seen.size + (page.nextPageToken ? PAGE_SIZE : 0));
      await run.renew();
    }
    await run.deleteMissing('users', seen);
    await retryDeferred(run, deferred);
    // The Workspace's domain, for the record, unless the operator set one.
    if (!run.directory.googleDomain && domains.size)
      await o.directories.update(id, { google_domain: mainDomain(domains) }).catch((e) => {
        if (!isAppError(e)) throw e;
      });
    log.info({ directoryId: id, listed: seen.size, ...run.counts.users }, 'google sync: users done');
  }

  /** Returns the ids of the groups stored, in Google's order (the members phase walks them). */
  async function syncGroups(run: Run, scope?: Scope): Promise<string[]> {
    const id = run.directory.id;
    const seen = new Set<string>();
    const order: string[] = [];
    for await (const page of run.list('groups')) {
      const batch: DsyncGroup[] = [];
      for (const item of page.items) {
        if (seen.has(item.id) || (scope && !scope.groups.has(item.id))) continue;
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
        const r = (await run.commit((trx) => writes.writeGroups(trx, id, batch))).value;
        run.counts.groups.created += r.created;
        run.counts.groups.updated += r.updated;
      }
      run.progress('groups', seen.size, seen.size + (page.nextPageToken ? PAGE_SIZE : 0));
      await run.renew();
    }
    await run.deleteMissing('groups', seen);
    log.info({ directoryId: id, listed: seen.size, ...run.counts.groups }, 'google sync: groups done');
    return order;
  }

  /** The USER members of a group at Google, in Google's order; undefined when the group is gone there. */
  async function googleMembers(run: Run, groupId: string): Promise<string[] | undefined> {
    const ids: string[] = [];
    const seen = new Set<string>();
    try {
      for await (const page of run.list('members', groupId))
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

  async function syncMembers(run: Run, groupIds: string[], scope?: Scope) {
    const id = run.directory.id;
    for (const [i, groupId] of groupIds.entries()) {
      const wanted = scope?.members.get(groupId) ?? (await googleMembers(run, groupId));
      if (wanted) {
        const want = new Set(wanted);
        const have = await listMemberIds(o.db, id, groupId);
        const has = new Set(have);
        for (const chunk of chunks(have.filter((x) => !want.has(x))))
          run.counts.memberships.removed += changed(
            await run.commit((trx) => writes.removeMembers(trx, id, groupId, chunk)),
          );
        for (const chunk of chunks(wanted.filter((x) => !has.has(x)))) {
          const n = changed(await run.commit((trx) => writes.addMembers(trx, id, groupId, chunk)));
          run.counts.memberships.added += n;
          run.counts.memberships.unknownUsers += chunk.length - n;
        }
      }
      run.progress('members', i + 1, groupIds.length);
      await run.renew();
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
    const skipped = (reason: string): SyncResult => ({
      directoryId,
      status: 'skipped',
      reason,
      counts: emptyCounts(),
      durationMs: Math.round(performance.now() - started),
    });
    const d = await o.directories.load(directoryId);
    if (!d) return skipped('the directory does not exist');
    if (d.type !== 'google') return skipped('the directory is not a Google directory');
    if (d.deactivated) return skipped('the directory is deactivated');
    if (!d.googleAccessToken && !d.googleRefreshToken) return skipped('the directory is not authorized yet');
    const owner = randomUUID();
    if (!(await claimLease(o.db, d.id, owner, o.clock.now(), leaseEnd(o.clock)))) {
      log.info({ directoryId: d.id }, 'google sync skipped: a run of this directory is in progress');
      return skipped('a sync of this directory is already running');
    }
    const run = openRun(runDeps, d, owner, o.tokens(d), opts);
    log.info({ directoryId: d.id }, 'google sync started');
    let status: 'completed' | 'failed' | 'stopped' = 'completed';
    let reason = '';
    try {
      const scope = await chosenScope(run);
      await syncUsers(run, scope);
      await syncMembers(run, await syncGroups(run, scope), scope);
    } catch (e) {
      if (e instanceof SyncStop) [status, reason] = ['stopped', e.message];
      else if (isGoogleError(e)) [status, reason] = ['failed', e.description];
      else {
        log.error({ directoryId: d.id, err: e }, 'google sync failed: internal error');
        await run.release('failed', 'internal error (see the logs)');
        throw e;
      }
    }
    await run.release(status, reason);
    const result: SyncResult = {
      directoryId,
      status,
      ...(reason ? { reason } : {}),
      counts: run.counts,
      durationMs: Math.round(performance.now() - started),
    };
    const fields = { directoryId: d.id, durationMs: result.durationMs, ...run.counts };
    if (status === 'completed') log.info(fields, 'google sync completed');
    else if (status === 'stopped') log.warn({ ...fields, reason }, `google sync stopped: ${reason}`);
    else log.error({ ...fields, reason }, `google sync failed: ${reason}`);
    return result;
  }

  return { syncDirectory };
}
