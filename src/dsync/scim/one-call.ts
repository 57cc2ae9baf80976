/**
 * SCIM writes as one server-side call (PostgreSQL): `POST /Users` and a members-only group `PATCH`
 * run as one function call each (sql/0240_dsync_write_functions.sql), outside an explicit
 * transaction, so the call is its own transaction: one round trip instead of eight (create) or
 * seven (PATCH). The functions take the same locks, check the same names, write the same rows
 * and events (payloads key for key as events/payload.ts) and queue delivery as the statement path
 * (users.ts createUser, groups.ts patchGroup, events/service.ts persistEvents); the answers are
 * the same on the wire.
 *
 * The statement path stays for everything else, and is used instead when the one-call path
 * cannot do the same: on CockroachDB (no advisory locks, limited PL/pgSQL), with audit rows enabled
 * (`audit.enabled`: the row is written in the write's transaction), and in batch mode with the
 * interval timer (its `ensure` job reads the job queue). Each function returns undefined then.
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

/** SCIM POST /Users in one call: 201 with the stored resource, or 409 `uniqueness` as createUser. */
export async function createUserOnce(
  db: Db,
  directory: Directory,
  body: unknown,
  policy: DeliveryPolicy,
): Promise<OneCallResult> {
  const { user, requested } = newUser(directory, body);
  const locks = lockOrder(nameLocks(directory.id, 'user', [user.userName ?? '', user.email ?? '', requested ?? '']));
  const names = [user.userName, user.email].filter((v): v is string => !!v).map((v) => v.toLowerCase());
  const event = {
    id: randomUUID(),
    event: 'user.created',
    payload: envelope('user.created', directory, { user }),
  };
  const c = commitArgs(directory, policy);
  const r = await call(
    db,
    sql<{ r: Returned }>`select gatehouse_dsync_create_user(
      ${directory.id}::uuid, ${directory.tenant}, ${directory.product}, ${directory.id}, ${user.id},
      ${requested !== undefined}, ${locks}::text[], ${names}::text[], ${user.userName}, ${user.externalId},
      ${user.email}, ${user.firstName}, ${user.lastName}, ${user.active},
      ${user.roles === undefined ? null : JSON.stringify(user.roles)}::json, ${JSON.stringify(user.raw)}::json,
      ${JSON.stringify(event)}::json, ${c.json}::json) as r`,
  );
  if (r.status === 'exists') throw scimError(409, 'User already exists', 'uniqueness');
  return { status: 201, data: user.raw, events: delivered(r, c.createdAt) };
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
