/**
 * The write side of Jackson's `users`, `groups` and `webhookLogs` controllers, for embedders that
 * write directly instead of sending SCIM requests. Each write runs like the SCIM request making
 * the same change: one transaction that changes the data (locking the rows and names it touches)
 * and writes the change's events (and queues their webhook delivery) through `withEvents`. So a direct write has
 * the same guarantees as a SCIM one: no event without its committed change, per-directory order.
 *
 * Equivalences (the SCIM request each method stands for):
 * - users.create → POST /Users (`user.created`), users.update → PUT /Users/{id} (`user.updated`),
 *   users.delete → DELETE /Users/{id} (`user.deleted`; memberships go without events),
 *   users.deleteAll → DELETE of every user of the directory;
 * - groups.create → POST /Groups, groups.update → PUT /Groups/{id} without `members`,
 *   groups.delete → DELETE /Groups/{id}, addUserToGroup / removeUserFromGroup → PATCH add/remove
 *   `members`, removeAllUsers → PATCH remove `members` (no value), groups.deleteAll → DELETE of
 *   every group of the directory.
 * Resources are found by id in the bound tenant+product (as Jackson's namespaces), the newest
 * directory first when several hold the same id.
 */
import { randomUUID } from 'node:crypto';
import { mapDbError } from '../core/db/errors.ts';
import { type Db, type Executor, withTx } from '../core/db/tx.ts';
import type { DirectoriesService } from './directories/service.ts';
import { dsyncError } from './errors.ts';
import { groupRecord } from './events/payload.ts';
import { type DeliveryPolicy, DirectoryUnavailable, type EventBatch, withEvents } from './events/service.ts';
import { resolveMemberships } from './scim/groups.ts';
import * as groupStore from './store/groups.ts';
import * as memberStore from './store/members.ts';
import * as userStore from './store/users.ts';
import type { Directory, DsyncGroup, DsyncUser, GroupRecord, Raw, WebhookEvent } from './types.ts';
import { eq, type ManagedUser, managedUser, storeScope } from './users/service.ts';

export interface Bound {
  tenant: string;
  product: string;
}

export interface Written<T> {
  value: T;
  events: WebhookEvent[];
}

/** Jackson's user input: `User & { directoryId }`. */
export interface UserInput {
  directoryId?: string;
  id?: string;
  first_name?: string;
  last_name?: string;
  email?: string;
  active?: boolean;
  roles?: unknown[];
  raw?: Raw;
}

const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/** Deletes per transaction in the bulk methods (Jackson's bulk-delete batch size). */
export const BULK_BATCH = 500;

function toUser(directoryId: string, id: string, u: UserInput, current?: DsyncUser): DsyncUser {
  const raw: Raw = isObject(u.raw) ? { ...u.raw } : current ? { ...current.raw } : {};
  raw.id = id;
  const email = text(u.email) ?? current?.email ?? text(raw.userName) ?? null;
  return {
    directoryId,
    id,
    userName: text(raw.userName) ?? email ?? current?.userName ?? null,
    externalId: text(raw.externalId) ?? current?.externalId ?? null,
    email,
    firstName: text(u.first_name) ?? current?.firstName ?? '',
    lastName: text(u.last_name) ?? current?.lastName ?? '',
    active: typeof u.active === 'boolean' ? u.active : (current?.active ?? true),
    roles: Array.isArray(u.roles) ? u.roles : current?.roles,
    raw,
  };
}

export function createWritesService(o: { db: Db; directories: DirectoriesService; delivery: DeliveryPolicy }) {
  /**
   * Runs `fn` like a SCIM write of the directory: change, events, commit (the directory row is
   * locked from the events' numbers to the commit, as for SCIM; `fn` locks what it changes). A
   * directory deleted meanwhile is a 404, one deactivated a 409 (nothing changed).
   */
  async function change<T>(
    directoryId: string,
    policy: DeliveryPolicy,
    fn: (trx: Executor, d: Directory, batch: EventBatch) => Promise<T>,
    conflict?: string,
  ): Promise<Written<T>> {
    const d = await o.directories.load(directoryId);
    if (!d) throw dsyncError(404, 'Directory configuration not found.');
    if (d.deactivated) throw deactivated();
    try {
      return await withTx(o.db, (trx) => withEvents(trx, d, policy, (batch) => fn(trx, d, batch)));
    } catch (e) {
      if (e instanceof DirectoryUnavailable) {
        if (e.reason === 'deactivated') throw deactivated();
        throw dsyncError(404, 'Directory configuration not found.');
      }
      throw conflict ? mapDbError(e, () => dsyncError(409, conflict)) : e;
    }
  }

  /** The directory, when it belongs to the bound tenant+product. */
  async function directoryIn(b: Bound, directoryId: unknown): Promise<Directory> {
    const d = typeof directoryId === 'string' ? await o.directories.load(directoryId) : undefined;
    if (!d || d.tenant !== b.tenant || d.product !== b.product)
      throw dsyncError(404, 'Directory configuration not found.');
    return d;
  }

  async function findUser(b: Bound, id: unknown): Promise<DsyncUser | undefined> {
    if (typeof id !== 'string' || id === '') return undefined;
    const r = await userStore.listUsers(o.db, storeScope(b), { filter: eq('id', id, true), offset: 0, limit: 1 });
    return r.users[0];
  }

  async function findGroup(b: Bound, id: unknown): Promise<DsyncGroup | undefined> {
    if (typeof id !== 'string' || id === '') return undefined;
    const r = await groupStore.listGroups(o.db, storeScope(b), { filter: eq('id', id, true), offset: 0, limit: 1 });
    return r.groups[0];
  }

  const userNotFound = () => dsyncError(404, 'User not found');
  const deactivated = () => dsyncError(409, 'The directory is deactivated: nothing was changed.');
  const groupNotFound = (id: unknown) => dsyncError(404, `Group with id ${String(id)} not found.`);

  // ---- users ---------------------------------------------------------------------------------

  async function createUser(b: Bound, input: UserInput, p = o.delivery): Promise<Written<ManagedUser>> {
    if (!isObject(input)) throw dsyncError(400, 'Missing required parameters.');
    const d = await directoryIn(b, input.directoryId);
    const id = text(input.id) || randomUUID();
    const user = toUser(d.id, id, input);
    if (!user.userName && !user.email) throw dsyncError(400, 'Missing required parameters.');
    return change(
      d.id,
      p,
      async (trx, _d, batch) => {
        await userStore.lockNames(trx, d.id, 'user', [user.userName ?? '', user.email ?? '', id]);
        if (
          (await userStore.findUser(trx, d.id, id)) ||
          (await userStore.findUserClash(trx, d.id, user.userName, user.email))
        )
          throw dsyncError(409, 'User already exists');
        await userStore.insertUser(trx, user);
        batch.add('user.created', { user });
        await resolveMemberships(trx, user, batch);
        return managedUser(user);
      },
      'User already exists',
    );
  }

  async function updateUser(b: Bound, id: unknown, input: UserInput, p = o.delivery): Promise<Written<ManagedUser>> {
    const found = await findUser(b, id);
    if (!found) throw userNotFound();
    return change(
      found.directoryId,
      p,
      async (trx, _d, batch) => {
        const current = await userStore.findUser(trx, found.directoryId, found.id, { forUpdate: true });
        if (!current) throw userNotFound();
        const user = toUser(current.directoryId, current.id, isObject(input) ? input : {}, current);
        await userStore.lockNames(trx, user.directoryId, 'user', [user.userName ?? '', user.email ?? '']);
        if (await userStore.findUserClash(trx, user.directoryId, user.userName, user.email, user.id))
          throw dsyncError(409, 'User already exists');
        await userStore.updateUser(trx, user);
        batch.add('user.updated', { user });
        return managedUser(user);
      },
      'User already exists',
    );
  }

  async function deleteUser(b: Bound, id: unknown, p = o.delivery): Promise<Written<null>> {
    const found = await findUser(b, id);
    if (!found) throw userNotFound();
    return change(found.directoryId, p, async (trx, _d, batch) => {
      const current = await userStore.findUser(trx, found.directoryId, found.id, { forUpdate: true });
      if (!current) throw userNotFound();
      await userStore.deleteUser(trx, current.directoryId, current.id);
      batch.add('user.deleted', { user: current });
      return null;
    });
  }

  /** Deletes every user of the directory, `BULK_BATCH` per transaction, one `user.deleted` each. */
  async function deleteAllUsers(b: Bound, directoryId: unknown, p = o.delivery): Promise<Written<number>> {
    const d = await directoryIn(b, directoryId);
    const events: WebhookEvent[] = [];
    let total = 0;
    for (;;) {
      const r = await change(d.id, p, async (trx, _d, batch) => {
        const ids = await userStore.listUserIds(trx, d.id, '', BULK_BATCH);
        const deleted = await userStore.deleteUsers(trx, d.id, ids);
        for (const user of deleted) batch.add('user.deleted', { user });
        return deleted.length;
      });
      events.push(...r.events);
      total += r.value;
      if (r.value < BULK_BATCH) return { value: total, events };
    }
  }

  // ---- groups --------------------------------------------------------------------------------

  async function createGroup(
    b: Bound,
    input: { directoryId?: string; name?: string; raw?: Raw; id?: string },
    p = o.delivery,
  ): Promise<Written<GroupRecord>> {
    if (!isObject(input) || typeof input.name !== 'string' || input.name === '')
      throw dsyncError(400, 'Missing required parameters.');
    const d = await directoryIn(b, input.directoryId);
    const id = text(input.id) || randomUUID();
    const raw: Raw = isObject(input.raw) ? { ...input.raw } : {};
    raw.id = id;
    const group: DsyncGroup = {
      directoryId: d.id,
      id,
      name: input.name,
      externalId: text(raw.externalId) ?? null,
      raw,
    };
    return change(
      d.id,
      p,
      async (trx, _d, batch) => {
        await userStore.lockNames(trx, d.id, 'group', [group.name, id]);
        if ((await groupStore.findGroup(trx, d.id, id)) || (await groupStore.findGroupByName(trx, d.id, group.name)))
          throw dsyncError(409, 'Group already exists');
        await groupStore.insertGroup(trx, group);
        batch.add('group.created', { group });
        return groupRecord(group);
      },
      'Group already exists',
    );
  }

  async function updateGroup(
    b: Bound,
    id: unknown,
    input: { name?: string; raw?: Raw },
    p = o.delivery,
  ): Promise<Written<GroupRecord>> {
    const found = await findGroup(b, id);
    if (!found) throw groupNotFound(id);
    return change(found.directoryId, p, async (trx, _d, batch) => {
      const current = await groupStore.findGroup(trx, found.directoryId, found.id, { forUpdate: true });
      if (!current) throw groupNotFound(id);
      const name = isObject(input) && typeof input.name === 'string' && input.name !== '' ? input.name : current.name;
      const raw: Raw = isObject(input) && isObject(input.raw) ? { ...input.raw } : { ...current.raw };
      raw.id = current.id;
      const group: DsyncGroup = { ...current, name, externalId: text(raw.externalId) ?? null, raw };
      await groupStore.updateGroup(trx, group);
      batch.add('group.updated', { group });
      return groupRecord(group);
    });
  }

  async function deleteGroup(b: Bound, id: unknown, p = o.delivery): Promise<Written<null>> {
    const found = await findGroup(b, id);
    if (!found) throw groupNotFound(id);
    return change(found.directoryId, p, async (trx, _d, batch) => {
      const current = await groupStore.findGroup(trx, found.directoryId, found.id, { forUpdate: true });
      if (!current) throw groupNotFound(id);
      await groupStore.deleteGroup(trx, current.directoryId, current.id);
      batch.add('group.deleted', { group: current });
      return null;
    });
  }

  /** Runs a membership change of the group (found in the bound scope), in its directory's transaction. */
  async function onGroup<T>(
    b: Bound,
    groupId: unknown,
    p: DeliveryPolicy,
    fn: (trx: Executor, g: DsyncGroup, batch: EventBatch) => Promise<T>,
  ): Promise<Written<T>> {
    const found = await findGroup(b, groupId);
    if (!found) throw groupNotFound(groupId);
    return change(found.directoryId, p, async (trx, _d, batch) => {
      const g = await groupStore.findGroup(trx, found.directoryId, found.id, { forUpdate: true });
      if (!g) throw groupNotFound(groupId);
      return fn(trx, g, batch);
    });
  }

  async function addUserToGroup(b: Bound, groupId: unknown, userId: unknown, p = o.delivery) {
    if (typeof userId !== 'string' || userId === '') throw dsyncError(400, 'Missing required parameters.');
    return onGroup(b, groupId, p, async (trx, group, batch) => {
      // As a SCIM PATCH add: a member that is not (yet) a user is kept (Jackson does not check).
      const [user] = await userStore.findUsers(trx, group.directoryId, [userId]);
      const added = await memberStore.addMembers(trx, group.directoryId, group.id, [userId]);
      if (added.length) batch.add('group.user_added', user ? { user, group } : { userId, group });
    });
  }

  async function removeUserFromGroup(b: Bound, groupId: unknown, userId: unknown, p = o.delivery) {
    if (typeof userId !== 'string' || userId === '') throw dsyncError(400, 'Missing required parameters.');
    return onGroup(b, groupId, p, async (trx, group, batch) => {
      const removed = await memberStore.removeMembers(trx, group.directoryId, group.id, [userId]);
      const [user] = removed.length ? await userStore.findUsers(trx, group.directoryId, removed) : [];
      if (user) batch.add('group.user_removed', { user, group });
    });
  }

  async function isUserInGroup(b: Bound, groupId: unknown, userId: unknown): Promise<boolean> {
    const g = await findGroup(b, groupId);
    if (!g || typeof userId !== 'string') return false;
    const r = await o.db
      .selectFrom('dsync_group_members')
      .select('user_id')
      .where('directory_id', '=', g.directoryId)
      .where('group_id', '=', g.id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return r !== undefined;
  }

  async function removeAllUsers(b: Bound, groupId: unknown, p = o.delivery) {
    return onGroup(b, groupId, p, async (trx, group, batch) => {
      const removed = await memberStore.removeMembers(trx, group.directoryId, group.id);
      const byId = new Map((await userStore.findUsers(trx, group.directoryId, removed)).map((u) => [u.id, u]));
      for (const id of removed) {
        const user = byId.get(id);
        if (user) batch.add('group.user_removed', { user, group });
      }
      return removed.length;
    });
  }

  /** Deletes every group of the directory, `BULK_BATCH` per transaction, one `group.deleted` each. */
  async function deleteAllGroups(b: Bound, directoryId: unknown, p = o.delivery): Promise<Written<number>> {
    const d = await directoryIn(b, directoryId);
    const events: WebhookEvent[] = [];
    let total = 0;
    for (;;) {
      const r = await change(d.id, p, async (trx, _d, batch) => {
        const ids = await groupStore.listGroupIds(trx, d.id, '', BULK_BATCH);
        const deleted = await groupStore.deleteGroups(trx, d.id, ids);
        for (const group of deleted) batch.add('group.deleted', { group });
        return deleted.length;
      });
      events.push(...r.events);
      total += r.value;
      if (r.value < BULK_BATCH) return { value: total, events };
    }
  }

  return {
    directoryIn,
    users: { create: createUser, update: updateUser, delete: deleteUser, deleteAll: deleteAllUsers },
    groups: {
      create: createGroup,
      update: updateGroup,
      delete: deleteGroup,
      addUserToGroup,
      removeUserFromGroup,
      isUserInGroup,
      removeAllUsers,
      deleteAll: deleteAllGroups,
    },
  };
}
