/**
 * The write side of Jackson's `users`, `groups` and `webhookLogs` controllers, for embedders that
 * write directly instead of sending SCIM requests. Each write is planned and applied like the SCIM
 * request making the same change (change/plan.ts, change/apply.ts): one transaction that changes
 * the data (locking the rows and names it touches) and writes the change's events (and queues their
 * webhook delivery); a user is created by the same planner as SCIM's (change/members.ts). So a
 * direct write has the same guarantees as a SCIM one: no event without its committed change,
 * per-directory order.
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
import type { Applier } from './change/apply.ts';
import { addMembers, createUser as createOne, removeMembers } from './change/members.ts';
import type { ChangePlan, Planner } from './change/plan.ts';
import type { DirectoriesService } from './directories/service.ts';
import { dsyncError } from './errors.ts';
import { groupRecord } from './events/payload.ts';
import { type DeliveryPolicy, DirectoryUnavailable } from './events/service.ts';
import * as groupStore from './store/groups.ts';
import * as steps from './store/steps.ts';
import * as userStore from './store/users.ts';
import { nameLocks } from './store/users.ts';
import type { Db } from './tables.ts';
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

/**
 * The controllers' writes over one directory store.
 * Long: the fourteen writes share the directory look-up in the bound tenant and product, the user
 * and group finders and the one `change` helper that plans and applies each write as SCIM would;
 * each write is a few lines of its own.
 */
export function createWritesService(o: {
  db: Db;
  directories: DirectoriesService;
  delivery: DeliveryPolicy;
  applier: Applier;
}) {
  /**
   * Applies the change `planner` plans for the directory, like a SCIM write of it (change/apply.ts:
   * its locks, reads, rows and events in one transaction). A directory deleted meanwhile is a 404,
   * one deactivated a 409 (nothing changed).
   */
  async function change<T>(
    directoryId: string,
    policy: DeliveryPolicy,
    planner: (d: Directory) => Planner<T>,
    conflict?: string,
  ): Promise<Written<T> & { written: string[][] }> {
    const d = await o.directories.load(directoryId);
    if (!d) throw dsyncError(404, 'Directory configuration not found.');
    if (d.deactivated) throw deactivated();
    try {
      return await o.applier.apply(d, planner(d), { policy });
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
    const create = createOne(user, { checkId: true, exists: () => dsyncError(409, 'User already exists') });
    return change(d.id, p, () => (c) => managedUser(create(c)), 'User already exists');
  }

  async function updateUser(b: Bound, id: unknown, input: UserInput, p = o.delivery): Promise<Written<ManagedUser>> {
    const found = await findUser(b, id);
    if (!found) throw userNotFound();
    return change(
      found.directoryId,
      p,
      (d) => (c) => {
        const current = c.read(steps.user(d.id, found.id, 'update'));
        if (!current) throw userNotFound();
        const user = toUser(current.directoryId, current.id, isObject(input) ? input : {}, current);
        const names = [user.userName, user.email].filter((v): v is string => !!v);
        c.lock(nameLocks(d.id, 'user', [user.userName ?? '', user.email ?? '']));
        if (c.read(steps.userTaken(d.id, names, { except: user.id }), 'false'))
          throw dsyncError(409, 'User already exists');
        c.write(steps.updateUser(user));
        c.event('user.updated', { user });
        return managedUser(user);
      },
      'User already exists',
    );
  }

  async function deleteUser(b: Bound, id: unknown, p = o.delivery): Promise<Written<null>> {
    const found = await findUser(b, id);
    if (!found) throw userNotFound();
    return change(found.directoryId, p, (d) => (c) => {
      const current = c.read(steps.user(d.id, found.id, 'update'));
      if (!current) throw userNotFound();
      c.write(steps.deleteUsers(d.id, [current.id]));
      c.event('user.deleted', { user: current });
      return null;
    });
  }

  /** Deletes every user of the directory, `BULK_BATCH` per transaction, one `user.deleted` each. */
  async function deleteAllUsers(b: Bound, directoryId: unknown, p = o.delivery): Promise<Written<number>> {
    const d = await directoryIn(b, directoryId);
    const events: WebhookEvent[] = [];
    let total = 0;
    for (;;) {
      const r = await change(d.id, p, () => (c) => {
        const batch = c.read(steps.firstUsers(d.id, BULK_BATCH), '[]');
        if (!batch.length) return 0;
        const gone = c.write(
          steps.deleteUsers(
            d.id,
            batch.map((u) => u.id),
          ),
        );
        for (const user of batch) c.event('user.deleted', { user }, { ...gone, key: user.id });
        return batch.length;
      });
      events.push(...r.events);
      const deleted = r.written[0]?.length ?? 0;
      total += deleted;
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
      () => (c) => {
        c.lock(nameLocks(d.id, 'group', [group.name, id]));
        if (c.read(steps.groupTaken(d.id, group.name, id), 'false')) throw dsyncError(409, 'Group already exists');
        c.write(steps.insertGroups(d.id, [group]));
        c.event('group.created', { group });
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
    return change(found.directoryId, p, (d) => (c) => {
      const current = c.read(steps.group(d.id, found.id, 'update'));
      if (!current) throw groupNotFound(id);
      const name = isObject(input) && typeof input.name === 'string' && input.name !== '' ? input.name : current.name;
      const raw: Raw = isObject(input) && isObject(input.raw) ? { ...input.raw } : { ...current.raw };
      raw.id = current.id;
      const group: DsyncGroup = { ...current, name, externalId: text(raw.externalId) ?? null, raw };
      c.write(steps.updateGroup(group));
      c.event('group.updated', { group });
      return groupRecord(group);
    });
  }

  async function deleteGroup(b: Bound, id: unknown, p = o.delivery): Promise<Written<null>> {
    const found = await findGroup(b, id);
    if (!found) throw groupNotFound(id);
    return change(found.directoryId, p, (d) => (c) => {
      const current = c.read(steps.group(d.id, found.id, 'update'));
      if (!current) throw groupNotFound(id);
      c.write(steps.deleteGroups(d.id, [current.id]));
      c.event('group.deleted', { group: current });
      return null;
    });
  }

  /** A membership change of the group (found in the bound scope), its row locked, in its directory's change. */
  async function onGroup<T>(
    b: Bound,
    groupId: unknown,
    p: DeliveryPolicy,
    fn: (c: ChangePlan, g: DsyncGroup) => T,
  ): Promise<Written<T> & { written: string[][] }> {
    const found = await findGroup(b, groupId);
    if (!found) throw groupNotFound(groupId);
    return change(found.directoryId, p, (d) => (c) => {
      const g = c.read(steps.group(d.id, found.id, 'update'));
      if (!g) throw groupNotFound(groupId);
      return fn(c, g);
    });
  }

  async function addUserToGroup(b: Bound, groupId: unknown, userId: unknown, p = o.delivery) {
    if (typeof userId !== 'string' || userId === '') throw dsyncError(400, 'Missing required parameters.');
    // As a SCIM PATCH add: a member that is not (yet) a user is kept (Jackson does not check).
    const r = await onGroup(b, groupId, p, (c, group) => {
      addMembers(c, group, [userId], c.read(steps.users(group.directoryId, [userId])));
    });
    return { value: r.value, events: r.events };
  }

  async function removeUserFromGroup(b: Bound, groupId: unknown, userId: unknown, p = o.delivery) {
    if (typeof userId !== 'string' || userId === '') throw dsyncError(400, 'Missing required parameters.');
    const r = await onGroup(b, groupId, p, (c, group) => {
      removeMembers(c, group, [userId], c.read(steps.users(group.directoryId, [userId])));
    });
    return { value: r.value, events: r.events };
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
    const r = await onGroup(b, groupId, p, (c, group) => {
      const members = [...c.read(steps.memberIds(group.directoryId, group.id), '[]')].sort();
      const known = c.read(steps.users(group.directoryId, members));
      const gone = c.write(steps.removeAllMembers(group.directoryId, group.id));
      for (const id of members) {
        const user = known.get(id);
        if (user) c.event('group.user_removed', { user, group }, { ...gone, key: id });
      }
    });
    return { value: r.written[0]?.length ?? 0, events: r.events };
  }

  /** Deletes every group of the directory, `BULK_BATCH` per transaction, one `group.deleted` each. */
  async function deleteAllGroups(b: Bound, directoryId: unknown, p = o.delivery): Promise<Written<number>> {
    const d = await directoryIn(b, directoryId);
    const events: WebhookEvent[] = [];
    let total = 0;
    for (;;) {
      const r = await change(d.id, p, () => (c) => {
        const batch = c.read(steps.firstGroups(d.id, BULK_BATCH), '[]');
        if (!batch.length) return 0;
        const gone = c.write(
          steps.deleteGroups(
            d.id,
            batch.map((g) => g.id),
          ),
        );
        for (const group of batch) c.event('group.deleted', { group }, { ...gone, key: group.id });
        return batch.length;
      });
      events.push(...r.events);
      total += r.written[0]?.length ?? 0;
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
