/**
 * `apply`: the one way a change of a directory is written. It takes the write's planner
 * (plan.ts), plans the change on what is known, applies it, and plans again on what it read when a
 * read no longer gives what the plan was made on. Applying a change writes its rows and its events
 * in one transaction, the events with the directory's next sequence numbers and their delivery
 * queued as the transaction's last writes (see events/service.ts):
 *
 * - on PostgreSQL, one call of gatehouse_dsync_apply (sql/0360_dsync_apply_prepared.sql), outside an explicit
 *   transaction: the call is its own transaction, one round trip. Changes of one directory that
 *   arrive while two calls for it run wait for the first of them and go together in the next call
 *   (at most 32): one transaction, one directory row lock and one commit for all, each with its own
 *   outcome. Only changes that lock no row go together (a create locks names only); a change that
 *   locks a row it reads (FOR UPDATE, FOR SHARE) has a call of its own, so that it never makes
 *   other writes of the directory wait for its row. A call that fails as a whole is run again one
 *   change per call, so that only the change that fails fails;
 * - in a transaction (`withTx`) when the write needs more than the call: with audit rows on
 *   (`audit.enabled`: the row commits with the change), in batch mode with the interval timer (its
 *   job is ensured in the transaction), and for a change whose reads kept changing under it (its
 *   row locks are then held from one attempt to the next) — on PostgreSQL the call inside it, on
 *   CockroachDB (always) each of the plan's statements on its own;
 * - in the caller's transaction when one is given (a Google sync page, which holds the directory
 *   row from its start).
 *
 * The facts read are kept (the rows a write locks or reads for its events, a bounded number per
 * process), so that the next write of the same group or user is planned right the first time.
 */
import { randomUUID } from 'node:crypto';
import type { Audit, AuditEvent } from '../../core/audit/events.ts';
import { keepNewest } from '../../core/bounded.ts';
import { engineOf } from '../../core/db/engine.ts';
import { lockNames, lockOrder } from '../../core/db/locks.ts';
import { retried, withTx } from '../../core/db/tx.ts';
import { isAppError } from '../../core/errors.ts';
import { serverJob } from '../../core/jobs/queue.ts';
import { wireEvent } from '../events/payload.ts';
import {
  DELIVER_TASK,
  type DeliveryPolicy,
  DirectoryUnavailable,
  deliveryQueue,
  enqueueSender,
  ensureBatchTimer,
} from '../events/service.ts';
import type { Wakeups } from '../events/wake.ts';
import { hasWebhook } from '../events/webhook.ts';
import { callApply, type ItemResult, runStatement, type WireCommit, type WireItem } from '../store/change.ts';
import { writeEvents } from '../store/events.ts';
import { claimSender, lockDirectoryRow, senderJobKey } from '../store/outbox.ts';
import { factJson, readsVersions } from '../store/steps.ts';
import type { Db, Executor } from '../tables.ts';
import type { Directory, DirectorySyncEvent, WebhookEvent } from '../types.ts';
import { ChangePlan, type DirectoryChange, frozen, type PlannedEvent, type Planner } from './plan.ts';

export interface ApplyOptions {
  policy: DeliveryPolicy;
  /** The caller's transaction: the change is applied in it (and commits with it). */
  trx?: Executor;
  /** The write's audit event, from its events as delivered (called once it is written). */
  audit?: (events: WebhookEvent[]) => AuditEvent | undefined;
}

export interface Applied<T> {
  /** The planner's answer. */
  value: T;
  /** The events committed, in order, as they are delivered. */
  events: WebhookEvent[];
  /** The keys each write of the applied plan returned. */
  written: string[][];
}

/** What became of one change in a call. */
type Outcome = { stale: string[] } | { writes: string[][]; events: WebhookEvent[] };

/** Changes of one directory sent in one call at most. */
const MAX_CHANGES_PER_CALL = 32;
/**
 * Calls of one directory (and delivery policy) running at once: they run side by side up to the
 * directory row lock of their events (one call's checks and inserts overlap the other's events and
 * commit); changes that arrive while both run wait for the first to end and go together in its
 * next call. On the benchmark machine (2 cores) 2 gave the best rate of 1, 2, 4 and 8.
 */
const CALLS_PER_DIRECTORY = 2;
/**
 * Calls running at once in the process, all directories together: a part of `db.pool.max`, which
 * other work shares. Each call holds a pooled connection while it waits for its directory's row
 * lock; without a bound, calls of many directories take the whole pool and every other statement
 * (a sender's read, a token request) queues behind them. Changes that wait for a call here go
 * together in it, as changes queued behind a directory's calls do.
 */
const MAX_CALLS = 4;
/** Own-transaction calls of one write before it is applied in a transaction of its own. */
const CALL_ATTEMPTS = 3;
/** Plans of one write inside a transaction (its row locks held) before it gives up. */
const TX_ATTEMPTS = 10;
/** Facts kept per process, and the longest one kept (at most 8 MB of text in all). */
const FACTS_KEPT = 2048;
const FACT_MAX_LENGTH = 4096;

export class ChangeContended extends Error {
  override name = 'ChangeContended';
}

/** How the events are queued (see events/service.ts). */
function deliveryMode(directory: Directory, policy: DeliveryPolicy): WireCommit['outbox'] {
  // An embedder's callback as the event sink (policy.webhooks false) means no webhook for these events.
  const delivered = policy.webhooks !== false && hasWebhook(directory);
  return !delivered ? 'none' : policy.batchMode ? 'batch' : 'realtime';
}

function commitOf(directory: Directory, policy: DeliveryPolicy): { createdAt: Date; wire: WireCommit } {
  const createdAt = policy.now();
  const outbox = deliveryMode(directory, policy);
  const senderId = randomUUID();
  const job =
    outbox === 'realtime'
      ? serverJob(
          policy.jobs.queue,
          DELIVER_TASK,
          { directoryId: directory.id, senderId },
          { queueName: deliveryQueue(directory.id), maxAttempts: policy.maxAttempts, jobKey: senderJobKey(senderId) },
        )
      : null;
  return { createdAt, wire: { created_at: createdAt.toISOString(), outbox, sender_id: senderId, job } };
}

const wireItem = (c: DirectoryChange): WireItem => ({
  reads: c.reads.map((r) => ({ ...r.stmt, expect: r.expect, ...(r.else ? { else: r.else } : {}) })),
  writes: c.writes,
  events: c.events,
});

/** Whether the event is kept, given what the writes returned. */
const kept = (e: PlannedEvent, writes: string[][]): boolean =>
  !e.when ||
  (e.when.key === undefined ? (writes[e.when.write]?.length ?? 0) > 0 : !!writes[e.when.write]?.includes(e.when.key));

/** The plan's statements one by one in `trx`, then the events as one write's (the function's steps, in order). */
async function applyStatements(
  trx: Executor,
  directory: Directory,
  policy: DeliveryPolicy,
  changes: DirectoryChange[],
  commit: ReturnType<typeof commitOf>,
): Promise<{ before: number; items: ItemResult[]; createdAt: Date }> {
  await lockNames(
    trx,
    changes.flatMap((c) => c.locks),
  );
  const items: ItemResult[] = [];
  const events: PlannedEvent[] = [];
  for (const c of changes) {
    const actual: string[] = [];
    for (const r of c.reads) {
      const t = await runStatement(trx, r.stmt);
      actual.push(t !== r.expect && r.else ? await runStatement(trx, r.else) : t);
    }
    if (actual.some((t, i) => t !== c.reads[i]?.expect)) {
      items.push({ stale: actual });
      continue;
    }
    const writes: string[][] = [];
    for (const w of c.writes) {
      const t = await runStatement(trx, w);
      writes.push(t === 'null' || w.plain ? [] : (JSON.parse(t) as string[]));
    }
    const mine = c.events.flatMap((e, i) => (kept(e, writes) ? [i] : []));
    for (const i of mine) events.push(c.events[i] as PlannedEvent);
    items.push({ writes, events: mine });
  }
  if (!events.length) return { before: 0, items, createdAt: commit.createdAt };
  // Stamped once the directory row that numbers the events is held, as the function does
  // (sql/0350_dsync_apply_created_at.sql): the stamps follow the sequence numbers.
  await lockDirectoryRow(trx, directory.id);
  const createdAt = policy.now();
  const outbox = commit.wire.outbox;
  const written = await writeEvents(trx, {
    directoryId: directory.id,
    events: events.map((e) => ({ id: e.id, event: e.event, payload: JSON.parse(e.payload) as DirectorySyncEvent })),
    createdAt,
    outbox,
  });
  if (!written) throw new DirectoryUnavailable('deleted');
  if (written.deactivated) throw new DirectoryUnavailable('deactivated');
  // A statement of its own, after the directory row lock of writeEvents was granted (claimSender).
  if (outbox === 'realtime' && (await claimSender(trx, directory.id, commit.wire.sender_id)))
    await enqueueSender(policy.jobs, trx, directory.id, commit.wire.sender_id, policy.maxAttempts);
  if (outbox === 'batch') await ensureBatchTimer(trx, policy);
  return { before: written.before, items, createdAt };
}

/** Per change: its outcome, the kept events numbered from `before` in call order. */
function outcomes(changes: DirectoryChange[], r: { before: number; items: ItemResult[] }, createdAt: Date): Outcome[] {
  let seq = r.before;
  return changes.map((c, i) => {
    const item = r.items[i] as ItemResult;
    if ('stale' in item) return { stale: item.stale };
    const events = item.events.map((k) => {
      const e = c.events[k] as PlannedEvent;
      seq += 1;
      return wireEvent({ id: e.id, seq, createdAt, payload: JSON.parse(e.payload) as DirectorySyncEvent });
    });
    return { writes: item.writes, events };
  });
}

/** Changes of one directory applied together: in `trx`, or (PostgreSQL, no `trx`) as one call of their own. */
async function execute(
  exec: Executor,
  inTransaction: boolean,
  directory: Directory,
  policy: DeliveryPolicy,
  changes: DirectoryChange[],
): Promise<Outcome[]> {
  const commit = commitOf(directory, policy);
  if (engineOf(exec) === 'postgres') {
    const r = await callApply(exec, {
      directory: directory.id,
      locks: lockOrder(changes.flatMap((c) => c.locks)),
      items: changes.map(wireItem),
      commit: commit.wire,
    });
    if (inTransaction && commit.wire.outbox === 'batch' && r.items.some((i) => 'events' in i && i.events.length > 0))
      await ensureBatchTimer(exec, policy);
    // The function stamps the events as it writes them (sql/0350); the caller's stamp only stands
    // for a database not migrated yet.
    return outcomes(changes, r, r.createdAt ?? commit.createdAt);
  }
  if (!inTransaction) throw new Error('a change is applied statement by statement only inside a transaction');
  const r = await applyStatements(exec, directory, policy, changes, commit);
  return outcomes(changes, r, r.createdAt);
}

/** A bounded map of the last text each read gave, parsed once (oldest dropped first). */
class Facts {
  private readonly map = new Map<string, { text: string; value: unknown }>();
  get(key: string): { text: string; value: unknown } | undefined {
    return this.map.get(key);
  }
  set(key: string, text: string): void {
    if (this.map.get(key)?.text === text) return;
    this.map.delete(key);
    if (text.length > FACT_MAX_LENGTH) return;
    keepNewest(this.map, key, { text, value: frozen(factJson(text)) }, FACTS_KEPT);
  }
}

/**
 * Plans and applies until a plan holds: undefined when `attempts` plans in a row were made on
 * reads that had changed by the time they were applied.
 */
async function settle<T>(
  directory: Directory,
  planner: Planner<T>,
  known: { seen: Map<string, string>; facts: Facts; versions: boolean },
  attempts: number,
  send: (c: DirectoryChange) => Promise<Outcome>,
): Promise<Applied<T> | undefined> {
  const { seen, facts } = known;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const plan = new ChangePlan(
      directory,
      (k) => {
        const text = seen.get(k);
        return text === undefined ? facts.get(k) : { text };
      },
      known.versions,
    );
    let value: T | undefined;
    let refused: { error: unknown } | undefined;
    try {
      value = planner(plan);
    } catch (e) {
      if (!isAppError(e)) throw e;
      refused = { error: e };
    }
    const change = plan.change;
    // An answer that writes nothing stands on what it read: as it is when every fact was read
    // by this write; otherwise its reads are checked first.
    const idle = refused !== undefined || (!change.writes.length && !change.events.length);
    if (idle && change.reads.every((r) => seen.get(r.key) === r.text)) {
      if (refused) throw refused.error;
      return { value: value as T, events: [], written: [] };
    }
    const out = await send(idle ? { ...change, writes: [], events: [] } : change);
    if ('stale' in out) {
      // A read that gave what was expected (its versions) still stands for the text it was made on.
      change.reads.forEach((r, i) => {
        const actual = out.stale[i] as string;
        seen.set(r.key, actual === r.expect ? r.text : actual);
      });
      continue;
    }
    for (const r of change.reads) if (r.kept) facts.set(r.key, r.text);
    if (refused) throw refused.error;
    return { value: value as T, events: idle ? [] : out.events, written: idle ? [] : out.writes };
  }
  return undefined;
}

/** At most `size` holders at once; the others wait in turn, and a slot given goes to the first of them. */
class CallSlots {
  private taken = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly size: number;
  constructor(size: number) {
    this.size = size;
  }
  take(): Promise<void> | undefined {
    if (this.taken < this.size) {
      this.taken++;
      return undefined;
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.taken--;
  }
}

/** A change waiting for its call (see submit). */
interface Waiting {
  change: DirectoryChange;
  resolve: (o: Outcome) => void;
  reject: (e: unknown) => void;
}

/**
 * `wake` hears of each change with events for real-time delivery once it has committed (not of
 * changes applied in a caller's transaction, which commits later): this process's lingering
 * senders send them at once.
 * Long: one closure for the process's shared state (directory lanes, call slots, facts) and the
 * operations that share it.
 */
export function createApplier(db: Db, audit: Audit, wake?: Wakeups) {
  const facts = new Facts();
  const versions = readsVersions(db);
  const lanes = new Map<string, { running: number; queued: Waiting[] }>();
  const slots = new CallSlots(MAX_CALLS);
  /** `run` in a call slot of the process, with the changes `batch` gives once the slot is taken. */
  async function runInSlot(directory: Directory, policy: DeliveryPolicy, batch: () => Waiting[]): Promise<void> {
    await slots.take();
    try {
      const b = batch();
      if (b.length) await run(directory, policy, b);
    } finally {
      slots.give();
    }
  }

  /** One call for the batch, each change settled with its own outcome; a failed call is run again one change each. */
  async function run(directory: Directory, policy: DeliveryPolicy, batch: Waiting[]): Promise<void> {
    let out: Outcome[];
    try {
      out = await retried(db, () =>
        execute(
          db,
          false,
          directory,
          policy,
          batch.map((b) => b.change),
        ),
      );
    } catch (e) {
      if (batch.length === 1 || e instanceof DirectoryUnavailable) {
        for (const b of batch) b.reject(e);
        return;
      }
      // The call failed for one change's sake (nothing was committed): one call each.
      for (const b of batch) await run(directory, policy, [b]);
      return;
    }
    if (wake && deliveryMode(directory, policy) === 'realtime') {
      // Handed to a sender of this process as committed (wake.ts): the same events its read gives.
      const events = out.flatMap((r) => ('events' in r ? r.events : []));
      if (events.length) wake.committed(directory.id, events);
    }
    batch.forEach((b, i) => {
      b.resolve(out[i] as Outcome);
    });
  }

  /** Sends a change in a call of its own (PostgreSQL), together with others of its directory when it locks no row. */
  function submit(directory: Directory, policy: DeliveryPolicy, change: DirectoryChange): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      const waiting: Waiting = { change, resolve, reject };
      if (change.reads.some((r) => r.locks)) {
        void runInSlot(directory, policy, () => [waiting]);
        return;
      }
      const key = `${directory.id}:${policy.webhooks === false ? 'no-webhooks' : 'webhooks'}`;
      let lane = lanes.get(key);
      if (!lane) {
        lane = { running: 0, queued: [] };
        lanes.set(key, lane);
      }
      lane.queued.push(waiting);
      if (lane.running >= CALLS_PER_DIRECTORY) return;
      const l = lane;
      l.running++;
      void (async () => {
        // The batch is taken once a slot is: what queued meanwhile goes in the same call.
        while (l.queued.length) await runInSlot(directory, policy, () => l.queued.splice(0, MAX_CHANGES_PER_CALL));
        if (--l.running === 0) lanes.delete(key);
      })();
    });
  }

  /** Applies the write inside `trx` (its row locks held between plans), then its audit event. */
  async function inTransaction<T>(
    trx: Executor,
    directory: Directory,
    planner: Planner<T>,
    o: ApplyOptions,
    seen: Map<string, string>,
  ): Promise<Applied<T>> {
    const r = await settle(directory, planner, { seen, facts, versions }, TX_ATTEMPTS, async (c) => {
      const [out] = await execute(trx, true, directory, o.policy, [c]);
      return out as Outcome;
    });
    if (!r) throw new ChangeContended(`directory ${directory.id}: the rows of a write kept changing under it`);
    await audited(trx, r, o);
    return r;
  }

  async function audited<T>(exec: Executor, r: Applied<T>, o: ApplyOptions): Promise<void> {
    const e = o.audit?.(r.events);
    if (e) await audit.record(exec, e);
  }

  /**
   * Plans the write with `planner` and applies it (see the head of this file). Throws what the
   * planner throws (the write's answer when it is refused), DirectoryUnavailable when the directory
   * was deleted or deactivated meanwhile (nothing written), and the database's errors.
   */
  async function apply<T>(directory: Directory, planner: Planner<T>, o: ApplyOptions): Promise<Applied<T>> {
    const seen = new Map<string, string>();
    if (o.trx) return inTransaction(o.trx, directory, planner, o, seen);
    const call =
      engineOf(db) === 'postgres' &&
      !(o.audit && audit.recordsRows()) &&
      !(o.policy.batchMode && o.policy.batchIntervalMs > 0);
    if (call) {
      const r = await settle(directory, planner, { seen, facts, versions }, CALL_ATTEMPTS, (c) =>
        submit(directory, o.policy, c),
      );
      if (r) {
        await audited(db, r, o);
        return r;
      }
    }
    const r = await withTx(db, (trx) => inTransaction(trx, directory, planner, o, seen));
    if (r.events.length && deliveryMode(directory, o.policy) === 'realtime') wake?.committed(directory.id);
    return r;
  }

  /** Changes of the directory queued for a call behind the calls running for it (all delivery policies). */
  function waiting(directoryId: string): number {
    let n = 0;
    for (const [key, lane] of lanes) if (key.startsWith(`${directoryId}:`)) n += lane.queued.length;
    return n;
  }

  return { apply, waiting };
}

export type Applier = ReturnType<typeof createApplier>;
