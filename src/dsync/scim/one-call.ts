/**
 * SCIM writes as one server-side call (PostgreSQL): `POST /Users` and a members-only group `PATCH`
 * run as one function call (sql/0240_dsync_write_functions.sql, bodies as of sql/0260), outside an explicit
 * transaction, so the call is its own transaction: one round trip instead of eight (create) or
 * seven (PATCH), and no round trip while the directory row is locked. Creates of one directory
 * that arrive together share a call (userCreates). The functions take the same locks, check the
 * same names, write the same rows and events (payloads key for key as events/payload.ts) and
 * queue delivery as the statement path (users.ts createUser, groups.ts patchGroup,
 * events/service.ts persistEvents); the answers are the same on the wire.
 *
 * The statement path stays for every other write, and is used for these too where the one-call
 * path cannot do the same (oneCallPossible): on CockroachDB (no advisory locks, limited PL/pgSQL),
 * with audit rows on (`audit.enabled`: the row is written in the write's transaction), and in batch
 * mode with the interval timer (its `ensure` job reads the job queue).
 */
import { randomUUID } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { auditEnabled } from '../../core/audit/events.ts';
import { engineOf } from '../../core/db/engine.ts';
import { pgCode } from '../../core/db/errors.ts';
import { lockOrder } from '../../core/db/locks.ts';
import { type Db, retried } from '../../core/db/tx.ts';
import { serverJob } from '../../core/jobs/queue.ts';
import { scimError } from '../errors.ts';
import { envelope, wireEvent } from '../events/payload.ts';
import { DELIVER_TASK, type DeliveryPolicy, DirectoryUnavailable, deliveryQueue } from '../events/service.ts';
import { hasWebhook } from '../events/webhook.ts';
import { senderJobKey } from '../store/outbox.ts';
import { nameLocks } from '../store/users.ts';
import type { Directory, DirectorySyncEvent, WebhookEvent } from '../types.ts';
import { memberChanges, view } from './groups.ts';
import { newUser } from './users.ts';

export interface OneCallResult {
  status: number;
  data: unknown;
  events: WebhookEvent[];
}

/** Whether a write of `policy` can run as one call on `db`. */
export function oneCallPossible(db: Db, policy: DeliveryPolicy): boolean {
  return engineOf(db) === 'postgres' && !auditEnabled() && !(policy.batchMode && policy.batchIntervalMs > 0);
}

/** The events' delivery, as persistEvents decides it, for the function's `p_commit`. */
function commitArgs(directory: Directory, policy: DeliveryPolicy) {
  const createdAt = policy.now();
  const delivered = policy.webhooks !== false && hasWebhook(directory);
  const outbox = !delivered ? 'none' : policy.batchMode ? 'batch' : 'realtime';
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
  return { createdAt, json: JSON.stringify({ created_at: createdAt.toISOString(), outbox, sender_id: senderId, job }) };
}

type Returned = {
  status: string;
  before?: number | string;
  events?: Array<{ id: string; event: string; payload: DirectorySyncEvent }>;
  id?: string;
  name?: string;
};

/** The function's events as delivered (wireEvent of what was stored). */
const delivered = (r: Returned, createdAt: Date): WebhookEvent[] =>
  (r.events ?? []).map((e, i) => wireEvent({ id: e.id, seq: Number(r.before) + 1 + i, createdAt, payload: e.payload }));

/** Runs the call; the directory gone or deactivated meanwhile is DirectoryUnavailable, as on the statement path. */
async function call(db: Db, query: RawBuilder<{ r: Returned }>): Promise<Returned> {
  try {
    const { rows } = await retried(db, () => query.execute(db));
    return rows[0]?.r as Returned;
  } catch (e) {
    const code = pgCode(e);
    if (code === 'GHD44') throw new DirectoryUnavailable('deleted');
    if (code === 'GHD09') throw new DirectoryUnavailable('deactivated');
    throw e;
  }
}

/** A create waiting for its call (see userCreates). */
interface Create {
  directory: Directory;
  policy: DeliveryPolicy;
  locks: string[];
  item: Record<string, unknown>;
  data: unknown;
  resolve: (r: OneCallResult) => void;
  reject: (e: unknown) => void;
}

/** Creates of one directory (and delivery policy) sent in one call at most. */
const MAX_CREATES_PER_CALL = 32;
/**
 * Calls of one directory (and delivery policy) running at once: they run side by side up to the
 * directory row lock of their events (one call's checks and inserts overlap the other's events and
 * commit); creates that arrive while both run wait for the first to end and go together in its
 * next call. On the benchmark machine (2 cores) 2 gave the best rate of 1, 2, 4 and 8: more calls
 * at once make smaller batches that queue on the directory row lock instead.
 */
const CALLS_PER_DIRECTORY = 2;

/**
 * SCIM POST /Users in one call: 201 with the stored resource, or 409 `uniqueness` as createUser.
 * Creates of one directory that arrive while a call for it runs wait for it and then go together
 * in the next call (at most MAX_CREATES_PER_CALL): one transaction, one directory row lock and one
 * commit for all of them, in arrival order, each with the answer it would get alone (a name taken
 * by an earlier create of the same call is a 409, as it would be one after the other). A call
 * that fails as a whole for one create's sake (a unique violation the name check could not see,
 * a value PostgreSQL refuses) is run again one create per call, so that only that create fails.
 * Nothing waits when no call runs: a lone create goes at once.
 */
export function userCreates(db: Db) {
  const waiting = new Map<string, { running: number; queued: Create[] }>();

  /** One call for the batch: each create's answer (201, or the 409 to throw), in order. */
  async function send(batch: Create[]): Promise<Array<OneCallResult | Error>> {
    const first = batch[0] as Create;
    const c = commitArgs(first.directory, first.policy);
    const locks = lockOrder(batch.flatMap((b) => b.locks));
    const r = (await call(
      db,
      sql<{ r: Returned }>`select gatehouse_dsync_create_users(
        ${first.directory.id}::uuid, ${first.directory.tenant}, ${first.directory.product}, ${first.directory.id},
        ${locks}::text[], ${JSON.stringify(batch.map((b) => b.item))}::json, ${c.json}::json) as r`,
    )) as unknown as { before: number | string; results: Array<{ status: string; events?: Returned['events'] }> };
    let before = Number(r.before);
    return batch.map((b, i) => {
      const one = r.results[i];
      if (one?.status !== 'created') return scimError(409, 'User already exists', 'uniqueness');
      const events = delivered({ status: 'created', before, events: one.events ?? [] }, c.createdAt);
      before += events.length;
      return { status: 201, data: b.data, events };
    });
  }

  /** Runs a batch and settles each create with its own answer. */
  async function run(batch: Create[]): Promise<void> {
    let answers: Array<OneCallResult | Error>;
    try {
      answers = await send(batch);
    } catch (e) {
      if (batch.length === 1 || e instanceof DirectoryUnavailable) {
        for (const b of batch) b.reject(e);
        return;
      }
      // The call failed for one create's sake (nothing was committed): one call each.
      for (const b of batch) await run([b]);
      return;
    }
    batch.forEach((b, i) => {
      const a = answers[i] as OneCallResult | Error;
      if (a instanceof Error) b.reject(a);
      else b.resolve(a);
    });
  }

  return function createUser(directory: Directory, body: unknown, policy: DeliveryPolicy): Promise<OneCallResult> {
    const { user, requested } = newUser(directory, body);
    const event = { id: randomUUID(), event: 'user.created', payload: envelope('user.created', directory, { user }) };
    const item = {
      id: user.id,
      check_id: requested !== undefined,
      names: [user.userName, user.email].filter((v): v is string => !!v).map((v) => v.toLowerCase()),
      user_name: user.userName,
      external_id: user.externalId,
      email: user.email,
      first_name: user.firstName,
      last_name: user.lastName,
      active: user.active,
      roles: user.roles === undefined ? null : user.roles,
      raw: user.raw,
      event,
    };
    const key = `${directory.id}:${policy.webhooks === false ? 'no-webhooks' : 'webhooks'}`;
    return new Promise<OneCallResult>((resolve, reject) => {
      const create: Create = {
        directory,
        policy,
        locks: nameLocks(directory.id, 'user', [user.userName ?? '', user.email ?? '', requested ?? '']),
        item,
        data: user.raw,
        resolve,
        reject,
      };
      let lane = waiting.get(key);
      if (!lane) {
        lane = { running: 0, queued: [] };
        waiting.set(key, lane);
      }
      if (lane.running >= CALLS_PER_DIRECTORY) {
        lane.queued.push(create);
        return;
      }
      const l = lane;
      l.running++;
      void (async () => {
        for (let batch = [create]; batch.length; batch = l.queued.splice(0, MAX_CREATES_PER_CALL)) await run(batch);
        if (--l.running === 0) waiting.delete(key);
      })();
    });
  };
}

/**
 * SCIM PATCH /Groups/{id} that only adds and removes listed members, in one call: 200 with the
 * group, or 404 as loadGroup. Undefined for any other PATCH (the statement path runs it).
 */
export async function patchMembersOnce(
  db: Db,
  directory: Directory,
  groupId: string,
  body: unknown,
  policy: DeliveryPolicy,
): Promise<OneCallResult | undefined> {
  const changes = memberChanges(body);
  if (!changes) return undefined;
  // The statement path inserts added members in one sorted order (store/members.ts addMembers).
  const ops = changes.map((c) => ({ ...c, sorted: c.op === 'add' ? [...c.ids].sort() : [] }));
  const c = commitArgs(directory, policy);
  const r = await call(
    db,
    sql<{ r: Returned }>`select gatehouse_dsync_patch_members(
      ${directory.id}::uuid, ${directory.tenant}, ${directory.product}, ${directory.id}, ${groupId},
      ${JSON.stringify(ops)}::json, ${c.json}::json) as r`,
  );
  if (r.status === 'missing') throw scimError(404, 'Group not found');
  return {
    status: 200,
    data: view({ id: String(r.id), name: String(r.name) }),
    events: delivered(r, c.createdAt),
  };
}
