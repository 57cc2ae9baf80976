/**
 * Management reads of users (Jackson `users.*` after `setTenantAndProduct`):
 * scoped by tenant+product and, when given, one directory. Newest first, pages of at most 50.
 */
import { ENTERPRISE_FIELDS } from '../enterprise.ts';
import { dsyncError } from '../errors.ts';
import { userRecord } from '../events/payload.ts';
import type { Predicate } from '../scim/filter.ts';
import * as store from '../store/users.ts';
import type { Db } from '../tables.ts';
import {
  type DsyncUser,
  directoryIdOrNil,
  type PageParams,
  page,
  type Scope,
  type ScopeQuery,
  type UserRecord,
} from '../types.ts';

export type ManagedUser = UserRecord & { directoryId: string };

/** Values of the enterprise extension a list narrows to, by the user record's names. */
export type EnterpriseQuery = Partial<Record<(typeof ENTERPRISE_FIELDS)[number]['record'], unknown>>;

/** Jackson's stored user: the event projection plus `directoryId`. */
export const managedUser = (u: DsyncUser): ManagedUser => {
  const { raw, ...rest } = userRecord(u);
  return { ...rest, directoryId: u.directoryId, raw };
};

export const storeScope = (s: Scope, directoryId = s.directoryId) => ({
  tenant: s.tenant,
  product: s.product,
  ...(directoryId ? { directoryId: directoryIdOrNil(directoryId) } : {}),
});

/** `column eq value` as a filter predicate (`exact`: compared case-sensitively). */
export const eq = (column: string, value: string, exact: boolean): Predicate => ({
  kind: 'cmp',
  field: { kind: 'column', column, exact, type: 'text' },
  op: 'eq',
  value,
});

export function createUsersService(o: { db: Db; resolveScope: (q: ScopeQuery) => Promise<Scope>; pageLimit?: number }) {
  /**
   * A page of users, newest first; `where` narrows it to the users whose enterprise extension has
   * these values (`department`, `organization`, … by their record names; case-insensitive but for
   * `employee_number` and `manager_id`).
   */
  async function list(q: ScopeQuery, p: PageParams = {}, where: EnterpriseQuery = {}): Promise<ManagedUser[]> {
    const scope = await o.resolveScope(q);
    const items = ENTERPRISE_FIELDS.flatMap((f) => {
      const v = where[f.record];
      return typeof v === 'string' && v !== '' ? [eq(f.column, v, f.exact)] : [];
    });
    const filter: Predicate | undefined = items.length ? { kind: 'and', items } : undefined;
    const { users } = await store.listUsers(o.db, storeScope(scope), { ...page(p, o.pageLimit), filter });
    return users.map(managedUser);
  }

  /** Throws 404 `User not found`. */
  async function get(q: ScopeQuery, id: unknown): Promise<ManagedUser> {
    const scope = await o.resolveScope(q);
    if (typeof id !== 'string' || id === '') throw dsyncError(404, 'User not found');
    const { users } = await store.listUsers(o.db, storeScope(scope), {
      filter: eq('id', id, true),
      offset: 0,
      limit: 1,
    });
    if (!users[0]) throw dsyncError(404, 'User not found');
    return managedUser(users[0]);
  }

  /** Jackson's `search(userName, directoryId)`: users of the directory whose userName or email it is. */
  async function search(q: ScopeQuery, userName: unknown, directoryId: unknown): Promise<ManagedUser[]> {
    const scope = await o.resolveScope(q);
    if (typeof userName !== 'string' || typeof directoryId !== 'string') return [];
    const filter: Predicate = { kind: 'or', items: [eq('user_name', userName, false), eq('email', userName, false)] };
    const { users } = await store.listUsers(o.db, storeScope(scope, directoryId), { filter, offset: 0, limit: 50 });
    return users.map(managedUser);
  }

  return { list, get, search };
}

export type UsersService = ReturnType<typeof createUsersService>;
