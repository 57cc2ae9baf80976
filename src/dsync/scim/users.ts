/**
 * SCIM `/Users` semantics (Jackson DirectoryUsers; RFC 7644 §3), scoped to one directory
 * (not only to tenant+product, as Jackson did). Each write is a planner (change/plan.ts): what it
 * reads, writes and emits, applied by change/apply.ts.
 */
import { randomUUID } from 'node:crypto';
import { addMembers, createUser as createOne } from '../change/members.ts';
import type { ChangePlan, Planner } from '../change/plan.ts';
import { scimError } from '../errors.ts';
import * as steps from '../store/steps.ts';
import * as users from '../store/users.ts';
import type { Executor } from '../tables.ts';
import type { Directory, DsyncUser, Raw } from '../types.ts';
import { isObject, resourceBody, userAttributes, userRaw } from './attributes.ts';
import type { Predicate } from './filter.ts';
import { applyPatch, explicitEmail, patchOperations, userOperations } from './patch.ts';

export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

const exists = () => scimError(409, 'User already exists', 'uniqueness');
const notFound = () => scimError(404, 'User not found');

function build(directory: Directory, id: string, body: Raw): DsyncUser {
  const a = userAttributes(body);
  if (!a.userName && !a.email) throw scimError(400, 'The attribute "userName" is required.', 'invalidValue');
  return { directoryId: directory.id, id, ...a, raw: userRaw(body, id) };
}

/** Loads a user of the directory or throws Jackson's 404. */
export async function loadUser(db: Executor, directory: Directory, id: string): Promise<DsyncUser> {
  const u = await users.findUser(db, directory.id, id);
  if (!u) throw notFound();
  return u;
}

/** The user a POST /Users body makes, and the id the client asked for (if any). Throws 400. */
export function newUser(directory: Directory, body: unknown): { user: DsyncUser; requested: string | undefined } {
  const b = resourceBody(body);
  const requested = typeof b.userId === 'string' && b.userId !== '' ? b.userId : undefined;
  return { user: build(directory, requested ?? randomUUID(), b), requested };
}

/**
 * The group ids a user body lists in `groups` (`[{value}]`), or undefined without the attribute.
 * RFC 7643 §4.1.2 makes `groups` read-only, but identity providers that manage memberships from
 * the user send them there (ory/polis#3136): they are honoured on POST and PUT.
 */
function listedGroups(body: unknown): string[] | undefined {
  const b = isObject(body) ? body : {};
  if (!Array.isArray(b.groups)) return undefined;
  const ids = b.groups.map((g) => (isObject(g) ? g.value : undefined));
  return [...new Set(ids.filter((v): v is string => typeof v === 'string' && v !== ''))];
}

/** Makes the user a member of the listed groups that exist in the directory (others are ignored). */
function join(c: ChangePlan, user: DsyncUser, groupIds: string[]): void {
  if (!groupIds.length) return;
  const known = new Map([[user.id, user]]);
  for (const group of c.read(steps.groups(user.directoryId, groupIds), '[]')) addMembers(c, group, [user.id], known);
}

/**
 * POST /Users: 201 with the stored resource, or 409 when the userName, email or requested id is
 * taken. Groups listed in `groups` get the user as a member (`group.user_added` each, after
 * `user.created`).
 */
export function createUser(directory: Directory, body: unknown): Planner<Answer> {
  const { user, requested } = newUser(directory, body);
  const create = createOne(user, { checkId: requested !== undefined, exists });
  const listed = listedGroups(body);
  return (c) => {
    const created = create(c);
    if (listed) join(c, created, listed);
    return { status: 201, data: created.raw };
  };
}

/** What a SCIM write answers. */
export type Answer = { status: number; data: unknown };

/**
 * PUT /Users/{id}: full replace; the columns follow the new body, so filters see it. The row is
 * locked. Groups listed in `groups` that the user is not a member of get it (`group.user_added`
 * after `user.updated`). A membership is never removed for missing from `groups`: Okta sends
 * `groups: []` with every PUT and manages memberships through /Groups (RFC 7643 §4.1.2).
 */
export function replaceUser(directory: Directory, id: string, body: unknown): Planner<Answer> {
  const listed = listedGroups(body);
  return (c) => {
    if (!c.read(steps.userExists(directory.id, id), 'true')) throw notFound();
    const user = build(directory, id, resourceBody(body));
    c.write(steps.updateUser(user));
    c.event('user.updated', { user });
    if (listed?.length) {
      const current = c.read(steps.groupIdsOf(directory.id, id), '[]');
      join(
        c,
        user,
        listed.filter((g) => !current.includes(g)),
      );
    }
    return { status: 200, data: user.raw };
  };
}

/** PATCH /Users/{id}: every op honoured, `remove` included; URN paths kept whole
 * (stored under the schema URN, not split at the dot of `2.0`). The row is locked. */
export function patchUser(directory: Directory, id: string, body: unknown): Planner<Answer> {
  return (c) => {
    const current = c.read(steps.user(directory.id, id, 'update'));
    if (!current) throw notFound();
    const ops = userOperations(patchOperations(body));
    const raw = applyPatch(current.raw, ops);
    raw.id = current.id;
    const a = userAttributes(raw);
    const email = explicitEmail(ops) ?? a.email;
    if (!a.userName && !email) throw scimError(400, 'The attribute "userName" is required.', 'invalidValue');
    if (typeof raw.active === 'string') raw.active = a.active;
    const user: DsyncUser = { ...current, ...a, email, raw };
    c.write(steps.updateUser(user));
    c.event('user.updated', { user });
    return { status: 200, data: user.raw };
  };
}

/** DELETE /Users/{id}: 200 with the deleted user (as Jackson); its memberships go too, without events. */
export function deleteUser(directory: Directory, id: string): Planner<Answer> {
  return (c) => {
    const current = c.read(steps.user(directory.id, id, 'update'));
    if (!current) throw notFound();
    c.write(steps.deleteUsers(directory.id, [current.id]));
    c.event('user.deleted', { user: current });
    // A copy: what was read may be shared with later plans (read-only).
    return { status: 200, data: structuredClone(current.raw) };
  };
}

export interface ListQuery {
  startIndex: number;
  /** The page size: the `count` asked for, within the page limit. */
  count: number;
  /** The `count` the request gave (a positive integer), or 0. */
  asked: number;
  filter: Predicate | undefined;
}

/**
 * GET /Users: one page and the true total (not capped at the page size), in Jackson's key order.
 * `itemsPerPage` is the `count` the request asked for, 0 without one, as Jackson answers for users
 * (RFC 7644 §3.4.2 calls it the number of resources in the page, which Resources and totalResults
 * give; Jackson's groups, and gatehouse's, answer that).
 */
export async function listUsers(db: Executor, directory: Directory, q: ListQuery) {
  const { resources: page, total } = await users.listUserResources(
    db,
    { directoryId: directory.id },
    { filter: q.filter, offset: q.startIndex - 1, limit: q.count, withTotal: true },
  );
  return {
    status: 200,
    data: {
      schemas: [LIST_RESPONSE],
      startIndex: q.startIndex,
      totalResults: total,
      itemsPerPage: q.asked,
      Resources: page.map((raw) => (isObject(raw) ? raw : {})),
    },
  };
}
