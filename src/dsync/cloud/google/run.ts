/**
 * The plumbing of one sync run: its lease, its transactions (directory lock → writes → events →
 * commit → callback), its Google calls (with the token refreshed once on a 401), paging, progress
 * and counts. A run is an object made per call; nothing is shared between runs.
 */
import type { Clock } from '../../../core/clock.ts';
import { withTx } from '../../../core/db/tx.ts';
import type { Logger } from '../../../core/log.ts';
import type { Applied, Applier } from '../../change/apply.ts';
import type { Planner } from '../../change/plan.ts';
import type { DirectoriesService } from '../../directories/service.ts';
import type { DeliveryPolicy } from '../../events/service.ts';
import { releaseLease, renewLease } from '../../store/cloud-syncs.ts';
import { listGroupIds } from '../../store/groups.ts';
import { listUserIds } from '../../store/users.ts';
import type { Db, Executor } from '../../tables.ts';
import type { Directory, EventCallback, WebhookEvent } from '../../types.ts';
import type { TokenSource } from './auth.ts';
import { type GoogleClient, googleError, isGoogleError, type ListPage } from './client.ts';
import type { ListKind } from './schemas.ts';
import * as writes from './writes.ts';

export const LEASE_MS = 10 * 60_000;
/** Deletions and membership changes per transaction. */
export const CHUNK = 500;

export interface SyncCounts {
  pages: number;
  users: { created: number; updated: number; deleted: number; skipped: number };
  groups: { created: number; updated: number; deleted: number; skipped: number };
  /** `notUsers`: nested groups and CUSTOMER members; `unknownUsers`: USER members that are no user of the directory */
  memberships: { added: number; removed: number; notUsers: number; unknownUsers: number };
  events: number;
}

export const emptyCounts = (): SyncCounts => ({
  pages: 0,
  users: { created: 0, updated: 0, deleted: 0, skipped: 0 },
  groups: { created: 0, updated: 0, deleted: 0, skipped: 0 },
  memberships: { added: 0, removed: 0, notUsers: 0, unknownUsers: 0 },
  events: 0,
});

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

export interface SyncOptions {
  /** Called with each event after its transaction committed (Jackson's `sync(callback)`). */
  callback?: EventCallback;
  onProgress?: (p: SyncProgress) => void;
}

export interface RunDeps {
  db: Db;
  clock: Clock;
  /** the `dsync.google` logger */
  log: Logger;
  directories: DirectoriesService;
  client: GoogleClient;
  /** How the run's events are delivered (webhooks; see events/service.ts). */
  delivery: DeliveryPolicy;
  /** Applies the run's changes (change/apply.ts), in the run's transactions. */
  applier: Applier;
  /** Minimum time between two `info` progress lines of one run (default 10 s). */
  progressLogMs?: number;
}

/** The run ends early without being a failure: the directory was deleted or deactivated, the lease was lost. */
export class SyncStop extends Error {}

export function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export const leaseEnd = (clock: Clock) => new Date(clock.now().getTime() + LEASE_MS);

/** A run of `directory` holding the lease `owner`. */
export function openRun(o: RunDeps, directory: Directory, owner: string, tokens: TokenSource, opts: SyncOptions) {
  const id = directory.id;
  const counts = emptyCounts();
  const progressLogMs = o.progressLogMs ?? 10_000;
  let lastLog = 0;

  async function emit(e: WebhookEvent) {
    try {
      await opts.callback?.(e);
    } catch (err) {
      o.log.warn({ directoryId: id, event: e.event, err }, 'google sync: the event callback failed');
    }
  }

  /**
   * One transaction: lock the directory, read what `prepare` compares, apply the change it plans
   * (rows and events, change/apply.ts), commit; then the callback.
   */
  async function commit<T>(prepare: (trx: Executor) => Promise<Planner<T>>): Promise<Applied<T>> {
    const r = await withTx(o.db, async (trx) => {
      const d = await o.directories.lock(trx, id);
      if (!d) throw new SyncStop('the directory was deleted during the sync');
      if (d.deactivated) throw new SyncStop('the directory was deactivated during the sync');
      return o.applier.apply(d, await prepare(trx), { policy: o.delivery, trx });
    });
    counts.events += r.events.length;
    for (const e of r.events) await emit(e);
    return r;
  }

  async function renew() {
    if (!(await renewLease(o.db, id, owner, leaseEnd(o.clock))))
      throw new SyncStop('the sync lease was lost (the directory was deleted, or another run took over)');
  }

  function progress(phase: SyncPhase, done: number, total: number) {
    opts.onProgress?.({ directoryId: id, phase, done, total, counts });
    const now = o.clock.now().getTime();
    const fields = { directoryId: id, phase, done, pages: counts.pages, events: counts.events };
    if (now - lastLog >= progressLogMs) {
      lastLog = now;
      o.log.info(fields, 'google sync progress');
    } else o.log.debug(fields, 'google sync progress');
  }

  /** A Google call with the run's access token; on a 401 the token is refreshed (and stored) once. */
  async function call<T>(fn: (token: string) => Promise<T>): Promise<T> {
    try {
      return await fn(await tokens.current());
    } catch (e) {
      if (!isGoogleError(e, 'unauthorized')) throw e;
    }
    return fn(await tokens.refresh());
  }

  /** Every page of a listing, following `nextPageToken` (a repeated token is Google's error, not a loop). */
  async function* list(kind: ListKind, groupKey?: string): AsyncGenerator<ListPage> {
    const seen = new Set<string>();
    let pageToken: string | undefined;
    do {
      const p = { ...(groupKey ? { groupKey } : {}), ...(pageToken ? { pageToken } : {}) };
      const page = await call((t) => o.client.listPage(kind, t, p));
      counts.pages++;
      yield page;
      pageToken = page.nextPageToken;
      if (pageToken && seen.has(pageToken))
        throw googleError('bad_response', `Google's Directory API repeated a page token while listing ${kind}`);
      if (pageToken) seen.add(pageToken);
    } while (pageToken);
  }

  /** Deletes what is stored but was not listed, in id order, CHUNK per transaction. */
  async function deleteMissing(kind: 'users' | 'groups', listed: Set<string>) {
    let after = '';
    for (;;) {
      const ids =
        kind === 'users' ? await listUserIds(o.db, id, after, CHUNK) : await listGroupIds(o.db, id, after, CHUNK);
      if (!ids.length) return;
      after = ids[ids.length - 1] as string;
      const gone = ids.filter((x) => !listed.has(x));
      if (!gone.length) continue;
      const r = await commit((trx) =>
        kind === 'users' ? writes.deleteUsers(trx, id, gone) : writes.deleteGroups(trx, id, gone),
      );
      counts[kind].deleted += r.value;
      await renew();
    }
  }

  /** Drops the lease and records the outcome. */
  async function release(status: 'completed' | 'failed' | 'stopped', error: string) {
    await releaseLease(o.db, id, owner, { status, finishedAt: o.clock.now(), error, stats: counts });
  }

  return { directory, counts, commit, renew, progress, call, list, deleteMissing, release };
}

export type Run = ReturnType<typeof openRun>;
