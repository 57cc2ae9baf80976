/**
 * Management reads of groups and memberships (Jackson `groups.*` after `setTenantAndProduct`): scoped by tenant+product and, when given, one directory.
 */
import { dsyncError } from '../errors.ts';
import { groupRecord } from '../events/payload.ts';
import * as groups from '../store/groups.ts';
import * as members from '../store/members.ts';
import type { Db } from '../tables.ts';
import type { DsyncGroup, GroupRecord, PageParams, Scope, ScopeQuery } from '../types.ts';
import { page } from '../types.ts';
import { eq, storeScope } from '../users/service.ts';

export type GroupWithMembers = GroupRecord & { members: { group_id: string; user_id: string }[] };

export function createGroupsService(o: {
  db: Db;
  resolveScope: (q: ScopeQuery) => Promise<Scope>;
  pageLimit?: number;
}) {
  /** The group with this id in the scope (the newest, if several directories hold one). */
  async function find(scope: Scope, id: unknown): Promise<DsyncGroup | undefined> {
    if (typeof id !== 'string' || id === '') return undefined;
    const r = await groups.listGroups(o.db, storeScope(scope), { filter: eq('id', id, true), offset: 0, limit: 1 });
    return r.groups[0];
  }

  async function list(q: ScopeQuery, p: PageParams = {}): Promise<GroupRecord[]> {
    const scope = await o.resolveScope(q);
    const r = await groups.listGroups(o.db, storeScope(scope), page(p, o.pageLimit));
    return r.groups.map(groupRecord);
  }

  /** One group with its members `[{group_id, user_id}]`. Throws 404 `Group with id … not found.` */
  async function get(q: ScopeQuery, id: unknown): Promise<GroupWithMembers> {
    const g = await find(await o.resolveScope(q), id);
    if (!g) throw dsyncError(404, `Group with id ${String(id)} not found.`);
    const ids = await members.listMemberIds(o.db, g.directoryId, g.id);
    return { ...groupRecord(g), members: ids.map((user_id) => ({ group_id: g.id, user_id })) };
  }

  /** A page of member user ids; an unknown group has none (Jackson). */
  async function getMembers(q: ScopeQuery, p: PageParams & { groupId?: unknown }): Promise<{ user_id: string }[]> {
    const g = await find(await o.resolveScope(q), p.groupId);
    if (!g) return [];
    return (await members.listMemberIds(o.db, g.directoryId, g.id, page(p, o.pageLimit))).map((user_id) => ({
      user_id,
    }));
  }

  /** Jackson's `search(displayName, directoryId)` (case-insensitive here). */
  async function search(q: ScopeQuery, displayName: unknown, directoryId: unknown): Promise<GroupRecord[]> {
    const scope = await o.resolveScope(q);
    if (typeof displayName !== 'string' || typeof directoryId !== 'string') return [];
    const r = await groups.listGroups(o.db, storeScope(scope, directoryId), {
      filter: eq('name', displayName, false),
      offset: 0,
      limit: 50,
    });
    return r.groups.map(groupRecord);
  }

  return { list, get, getMembers, search };
}

export type GroupsService = ReturnType<typeof createGroupsService>;
