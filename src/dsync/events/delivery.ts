/**
 * Real-time delivery: the work of a directory's sender, a `webhook_deliver` job in the directory's
 * queue `dsync:<directory id>` (so at most one runs per directory). A change that queues events
 * makes sure, under the directory's row lock, that the directory has a sender on its way
 * (store/events.ts writeEvents). The sender:
 *
 *   - reads the directory's queued events in `seq` order, a page at a time, and POSTs them one after
 *     the other over one keep-alive connection, as fast as the receiver answers;
 *   - marks delivered events in one statement per up to FLUSH_EVERY events, or once the oldest
 *     unmarked one was answered MARK_WITHIN_MS ago (their outbox rows deleted, `delivered_at`
 *     stamped), and always before it stops; it reads only events after the last one it sent, so
 *     under steady traffic a POST costs no mark statement of its own;
 *   - when nothing is left, lingers: it looks again every LINGER_POLL_MS for up to `lingerMs`
 *     (`dsync.webhook.linger`), and sends what came meanwhile in the same run. In a process that
 *     also applies the directory's changes, each commit of its events wakes it at once (wake.ts),
 *     and its polls, which then only catch other processes' writes, back off from LINGER_POLL_MS
 *     by doubling. So under steady
 *     traffic a directory keeps one running sender instead of a new job per burst (each new job
 *     costs an enqueue, a NOTIFY and a job fetch before its first POST). It lingers only while
 *     the worker process has another idle job slot (`LingerControl.may`), which can take any job
 *     that comes, so lingering never keeps another job (another directory's sender) waiting, and
 *     not while the worker shuts down;
 *   - then steps down under the directory's row lock (releaseSender): an event committed after
 *     its last look finds no sender and starts a new one, so no event waits without a sender.
 *
 * A failure before any success in this run throws: graphile-worker retries the job with its
 * backoff and the events wait, in order (new events do not start a second sender while this one
 * has attempts left). A failure after some successes hands the rest to a fresh job, so that a
 * receiver failing now and then never uses up the attempts of a sender that makes progress. A
 * sender out of attempts stays failed (visible in `graphile_worker.jobs`, `jobs failed`) with its
 * events queued, and is marked failed in `dsync_webhook_senders` (the task on its last attempt, or
 * the maintenance run for one that died on it); `jobs retry` or the directory's next event starts
 * delivery again, still in order.
 *
 * A sender is named by its `senderId` (job key `dsync:sender:<senderId>`), never by a job id read
 * back from graphile-worker: a data transaction never reads the job queue, which may live in
 * another database (`queue.dsn`).
 * After `maxPerRun` events the sender hands over to a fresh job too, and after TURN_MS when every
 * job slot of its worker is busy (`WorkerControl.idleSlot`): jobs waiting for a slot, such as the
 * senders of other directories with steady traffic, run before its successor (same `run_at`
 * order), so no directory waits for another's 1,000 events.
 *
 * Exactly once by `id` for a receiver that de-duplicates: an event is never marked delivered
 * without a 2xx, and is sent again only if the worker died between the receiver's 2xx and the
 * mark (at most FLUSH_EVERY events). A directory deleted, deactivated or left without webhook:
 * its queued events are dropped (logged at info).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { withTx } from '../../core/db/tx.ts';
import { metrics } from '../../core/observability/metrics.ts';
import { createKeepAlive } from '../../core/safe-fetch.ts';
import * as outbox from '../store/outbox.ts';
import type { WebhookEvent } from '../types.ts';
import { wireEvent } from './payload.ts';
import type { SenderOptions } from './senders.ts';
import { type DeliveryPolicy, enqueueSender, ensureBatchTimer } from './service.ts';
import type { WakeTicket, Wakeups } from './wake.ts';
import { DeliveryFailed, postWebhook, undeliverable, type WebhookAttempt } from './webhook.ts';

export interface DeliveryOptions extends SenderOptions {
  maxAttempts: number;
  /** Events one job run delivers before handing the rest to a new job. */
  maxPerRun?: number;
  /** `dsync.webhook.linger` in ms: how long a sender with nothing to send waits for more (0: none). */
  lingerMs?: number;
  /** Commits of this process's changes, which wake its lingering senders (wake.ts). */
  wake?: Wakeups;
}

/** What the worker tells a sender (tasks/webhook_deliver.ts). */
export interface WorkerControl {
  /**
   * Whether another job slot of the worker is idle now: the sender may linger, and need not make
   * room for waiting jobs.
   */
  idleSlot(): boolean;
  /** Wakes an idle slot to look for waiting jobs (once per linger: the slot is then really idle). */
  nudge?(): void;
  /** Aborted when the worker shuts down: the sender stops waiting and steps down. */
  signal?: AbortSignal | undefined;
}

export interface DeliverJob {
  id: number;
  /** This attempt's number (1 for the first). */
  attempt: number;
}

/** The job's payload: `senderId` is absent in jobs of earlier releases (named by their job id). */
export interface DeliverPayload {
  directoryId: string;
  senderId?: string | undefined;
}

export type DeliverOutcome =
  | { kind: 'nothing' }
  | { kind: 'dropped'; events: number; reason: string }
  | { kind: 'delivered'; events: number; continuedBy?: string | undefined; lingered?: number };

/** Delivered events marked per statement (and the most a killed worker can have to send again). */
const FLUSH_EVERY = 32;
/** Delivered events are marked at the latest this long after the first unmarked one was answered. */
const MARK_WITHIN_MS = 100;
/** How long a sender runs before it hands over to a fresh job while every job slot is busy. */
const TURN_MS = 500;
/** Queued events read per query. */
const PAGE = 200;
/**
 * How often a lingering sender looks for new events of its directory; where commits here wake it,
 * the first of its polls, each wait then twice the one before.
 */
const LINGER_POLL_MS = 10;
/**
 * After a read that found less than a page, the next read waits until this long after it: under
 * steady traffic a sender that kept up would otherwise read once per event (a query and a wake-up
 * each), and that work slows the writes it waits for, so it keeps up with fewer events per read.
 */
const MIN_READ_GAP_MS = 5;

/** An event to send: read from the queue, or handed over by a commit of this process (wake.ts). */
interface Outgoing {
  id: string;
  seq: number;
  createdAt: Date;
  body: string;
  /** Whether its webhook log row was written when it was queued; undefined: not known (handed over). */
  logged: boolean | undefined;
}

const queuedEvent = (row: outbox.QueuedEvent): Outgoing => ({
  id: row.id,
  seq: row.seq,
  createdAt: row.createdAt,
  body: JSON.stringify(wireEvent(row)),
  logged: row.logged,
});

/** The same body as its queued row gives: the payload as stored, with the stored id, seq and stamp. */
const handedEvent = (e: WebhookEvent): Outgoing => ({
  id: e.id,
  seq: e.seq,
  createdAt: new Date(e.created_at),
  body: JSON.stringify(e),
  logged: undefined,
});

/** Waits `ms`, or less when `signal` aborts. */
const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Real-time delivery: a directory's sender posts its events in order, lingers, hands on or steps
 * down; the maintenance task repairs senders whose jobs went missing.
 * Long: deliver, its hand-over and the repair share the outbox's sender bookkeeping.
 */
export function createDeliveryService(o: DeliveryOptions) {
  const maxPerRun = o.maxPerRun ?? 1000;
  const lingerMs = Math.max(0, o.lingerMs ?? 0);

  /**
   * A fresh sender for the directory (its job runs after this one: same queue); with `replacing`,
   * only if that sender is still the directory's. Returns the new sender's id, or undefined.
   */
  const handOn = (directoryId: string, replacing?: outbox.SenderRef) =>
    withTx(o.db, async (trx) => {
      const senderId = randomUUID();
      if (replacing) {
        if (!(await outbox.replaceSender(trx, directoryId, replacing, senderId))) return undefined;
      } else await outbox.setSender(trx, directoryId, senderId);
      await enqueueSender(o.jobs, trx, directoryId, senderId, o.maxAttempts);
      return senderId;
    });

  const release = (directoryId: string, sender: outbox.SenderRef) =>
    withTx(o.db, (trx) => outbox.releaseSender(trx, directoryId, sender));

  async function drop(directoryId: string, sender: outbox.SenderRef, reason: string): Promise<DeliverOutcome> {
    let events = 0;
    do events += await outbox.dropQueued(o.db, directoryId, 'realtime', undefined, reason);
    while (!(await release(directoryId, sender)));
    // A deleted directory's events went with it (the count is unknown here): say so anyway.
    if (events || reason === 'directory deleted') o.log.info({ directoryId, events, reason }, 'webhook events dropped');
    return events ? { kind: 'dropped', events, reason } : { kind: 'nothing' };
  }

  /**
   * Runs the directory's sender. `worker` (from the worker) allows lingering for more events when
   * none is left, and turns; without it the sender steps down at once and never yields its slot.
   * Long: the run's state (read position, wake ticket, unmarked events, linger) is shared by its
   * read, send, mark and linger steps, which are short closures over it.
   */
  async function deliver(p: DeliverPayload, job: DeliverJob, worker?: WorkerControl): Promise<DeliverOutcome> {
    const sender: outbox.SenderRef = { senderId: p.senderId, jobId: job.id };
    const directory = await o.directories.load(p.directoryId);
    const reason = undeliverable(directory);
    if (reason || !directory) return drop(p.directoryId, sender, reason ?? 'directory deleted');
    const target = directory.webhook;
    const keepAlive = createKeepAlive();
    let delivered = 0;
    let done: string[] = [];
    let doneAt = o.clock.now();
    /** When the oldest unmarked delivered event was answered (performance.now()). */
    let doneSince = 0;
    /** The last event sent by this run: the next read starts after it. */
    let lastSeq: number | undefined;
    /** When this run's first POST was answered: its turn counts from there, not from a held first POST. */
    let started: number | undefined;
    /** Since when the queue was found empty (performance.now()), while lingering. */
    let idleSince: number | undefined;
    /** Lingers that ended with new events (sent by this run instead of a new job). */
    let lingered = 0;
    const mayLinger = () =>
      lingerMs > 0 &&
      worker !== undefined &&
      !worker.signal?.aborted &&
      performance.now() - (idleSince as number) < lingerMs &&
      worker.idleSlot();
    /** This run had its turn and jobs may be waiting for a slot. */
    const yieldTurn = () =>
      worker !== undefined && performance.now() - (started as number) >= TURN_MS && !worker.idleSlot();
    const outcome = (continuedBy?: string): DeliverOutcome =>
      delivered ? { kind: 'delivered', events: delivered, continuedBy, lingered } : { kind: 'nothing' };
    /** Delivered events handed over by a commit here, not known to be logged: their attempts, until marked. */
    const maybeLogged = new Map<string, { body: string; attempt: WebhookAttempt }>();
    const flush = async () => {
      if (!done.length) return;
      const logged = await outbox.markDelivered(o.db, done, doneAt);
      // Logging turned on after this sender loaded its directory: their attempts are recorded now.
      for (const id of logged) {
        const m = maybeLogged.get(id);
        if (m) await o.logs.record(o.db, directory.id, target.endpoint, m.body, m.attempt, job.attempt, id);
      }
      maybeLogged.clear();
      delivered += done.length;
      done = [];
    };
    /** When the last read that found less than a page started (performance.now()). */
    let shortReadAt: number | undefined;
    /** Fired by a commit of the directory's events after the last read began (wake.ts). */
    let ticket: WakeTicket | undefined;
    /** The next poll's wait while lingering, doubled after each while commits here wake the sender. */
    let pollMs = LINGER_POLL_MS;
    /** The events of the last read are sent, and it found less than a page. */
    let sentShort = false;
    /**
     * What to send without reading the queue (wake.ts), or undefined: read it. Without a read, a
     * sender of a process that writes the directory sends the events committed here since its last
     * read when they follow the last one it sent, and nothing when no commit came (the linger's
     * polls find other processes' events). Not after a full page (more wait), and not while the
     * directory logs its events (whether each is logged is in the queue).
     */
    const handedOver = (): Outgoing[] | undefined => {
      const known = sentShort;
      sentShort = false;
      const sent = lastSeq;
      if (!ticket || !o.wake?.writer() || sent === undefined || shortReadAt === undefined) return undefined;
      if (!ticket.fired()) return known ? [] : undefined;
      const events = ticket.events();
      const next = o.wake.arm(directory.id);
      ticket.done();
      ticket = next;
      if (!events || directory.logWebhookEvents) return undefined;
      const fresh = events.filter((e) => e.seq > sent).sort((a, b) => a.seq - b.seq);
      if (fresh.some((e, i) => e.seq !== sent + 1 + i)) return undefined;
      return fresh.map(handedEvent);
    };
    /** One wait of a linger: until a commit here, the next poll, or the linger's end. */
    const lingerWait = async () => {
      if (!ticket || !o.wake?.writer()) return pause(LINGER_POLL_MS, worker?.signal);
      const left = lingerMs - (performance.now() - (idleSince as number));
      await ticket.wait(Math.max(1, Math.min(pollMs, left)), worker?.signal);
      pollMs *= 2;
    };
    try {
      for (;;) {
        let rows = handedOver();
        if (rows === undefined) {
          if (shortReadAt !== undefined) {
            const wait = shortReadAt + MIN_READ_GAP_MS - performance.now();
            if (wait > 0) await pause(wait, worker?.signal);
          }
          ticket?.done();
          ticket = o.wake?.arm(directory.id);
          const readAt = performance.now();
          const read = await outbox.queuedEvents(o.db, directory.id, 'realtime', PAGE, undefined, lastSeq);
          shortReadAt = read.length < PAGE ? readAt : undefined;
          metrics.webhookSenderReads.inc({ result: read.length ? 'events' : 'empty' });
          rows = read.map(queuedEvent);
        }
        if (!rows.length) {
          if (idleSince === undefined) {
            idleSince = performance.now();
            worker?.nudge?.();
          }
          if (performance.now() - doneSince >= MARK_WITHIN_MS) await flush();
          if (mayLinger()) {
            await lingerWait();
            continue;
          }
          await flush();
          if (await release(directory.id, sender)) return outcome();
          // Events wait that the read after `lastSeq` did not see (re-sent older events): read
          // from the start again (everything sent is marked, flush above).
          lastSeq = undefined;
          continue;
        }
        if (idleSince !== undefined) {
          lingered++;
          idleSince = undefined;
          pollMs = LINGER_POLL_MS;
        }
        for (const row of rows) {
          const body = row.body;
          const a = await postWebhook(o.fetch, o.clock, target, body, keepAlive);
          if (a.delivered) metrics.webhookLatency.observe(Math.max(0, Date.now() - row.createdAt.getTime()) / 1000);
          // Handed over by a commit: whether it is logged is known when it is marked (or now, if it failed).
          const logged = row.logged ?? (a.delivered ? undefined : await outbox.isLogged(o.db, row.id));
          if (logged || directory.logWebhookEvents)
            await o.logs.record(o.db, directory.id, target.endpoint, body, a, job.attempt, row.id);
          else if (logged === undefined) maybeLogged.set(row.id, { body, attempt: a });
          if (!a.delivered) {
            await flush();
            const message = `webhook delivery of event ${row.id} (seq ${row.seq}) failed: ${a.error}`;
            if (!delivered) throw new DeliveryFailed(message);
            o.log.warn({ directoryId: directory.id, delivered, error: a.error }, 'webhook delivery interrupted');
            return outcome(await handOn(directory.id));
          }
          started ??= performance.now();
          if (!done.length) doneSince = performance.now();
          done.push(row.id);
          doneAt = a.completedAt;
          lastSeq = row.seq;
          if (done.length >= FLUSH_EVERY) await flush();
          if (delivered + done.length >= maxPerRun || yieldTurn()) {
            await flush();
            return outcome(await handOn(directory.id));
          }
        }
        sentShort = shortReadAt !== undefined;
        if (performance.now() - doneSince >= MARK_WITHIN_MS) await flush();
      }
    } finally {
      ticket?.done();
      keepAlive.destroy();
    }
  }

  /**
   * The crontab's maintenance run: checks each directory's sender against the job queue. A sender
   * whose job no longer exists (removed by hand with `complete_jobs`/`remove_job`) is replaced
   * when events wait, and marked failed otherwise; one whose job ran out of attempts without
   * saying so (its worker died on the last one) is marked failed, so the directory's next event
   * starts a new sender. Directories with waiting events and no sender row get one. Returns the
   * new senders.
   */
  async function repairOrphans(): Promise<string[]> {
    const created: string[] = [];
    const senders = await outbox.activeSenders(o.db);
    const keyed = senders.filter((s) => s.senderId);
    const byKey = await o.jobs.queue.keyedStates(
      o.db,
      keyed.map((s) => outbox.senderJobKey(s.senderId as string)),
    );
    const byId = await o.jobs.queue.statesById(senders.filter((s) => !s.senderId).map((s) => s.jobId));
    for (const s of senders) {
      const state = s.senderId ? byKey.get(outbox.senderJobKey(s.senderId)) : byId.get(s.jobId);
      if (state === 'live') continue;
      if (state === undefined && s.waiting) {
        const id = await handOn(s.directoryId, s);
        if (id) created.push(id);
      } else await outbox.markSenderFailed(o.db, s.directoryId, s);
    }
    for (const directoryId of await outbox.directoriesWithoutSender(o.db)) {
      const id = await handOn(directoryId);
      if (id) created.push(id);
    }
    if (created.length) o.log.warn({ jobs: created.length }, 'webhook events without a delivery job were given one');
    return created;
  }

  /** The task on its last attempt: the sender is out of attempts (the directory's next event starts a new one). */
  const senderFailed = (p: DeliverPayload, job: DeliverJob) =>
    outbox.markSenderFailed(o.db, p.directoryId, { senderId: p.senderId, jobId: job.id });

  /**
   * Queues the directory's kept events from sequence number `fromSeq` on for delivery (real-time or
   * batch, as `policy` says) again (an operator's resend: the receiver lost them). Events still queued stay queued once; a
   * sender is started unless one is on its way (which reads them from the start when it would
   * step down). Returns how many were queued. The directory row is locked meanwhile, as for a write.
   */
  async function resend(directoryId: string, fromSeq: number, policy: DeliveryPolicy): Promise<number> {
    const mode = policy.batchMode ? 'batch' : 'realtime';
    return withTx(o.db, async (trx) => {
      await outbox.lockDirectoryRow(trx, directoryId);
      const r = await sql`insert into dsync_webhook_outbox (event_id, directory_id, seq, mode, job_id)
        select id, directory_id, seq, ${mode}, null from dsync_events
        where directory_id = ${directoryId} and seq >= ${fromSeq}
        on conflict (event_id) do nothing`.execute(trx);
      const queued = Number(r.numAffectedRows ?? 0);
      if (!queued) return 0;
      // Batch mode: the interval timer (or the next processing run) sends them with the rest.
      if (mode === 'batch') await ensureBatchTimer(trx, policy);
      else {
        const senderId = randomUUID();
        if (await outbox.claimSender(trx, directoryId, senderId))
          await enqueueSender(o.jobs, trx, directoryId, senderId, o.maxAttempts);
      }
      return queued;
    });
  }

  return { deliver, repairOrphans, senderFailed, resend };
}
