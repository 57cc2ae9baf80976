/** Jackson's event envelope and its user/group projections (Jackson scim/transform.ts). */
import { ENTERPRISE_FIELDS, enterpriseOf } from '../enterprise.ts';
import type {
  Directory,
  DirectorySyncEvent,
  DirectorySyncEventType,
  DsyncGroup,
  DsyncUser,
  GroupRecord,
  UserRecord,
  WebhookEvent,
} from '../types.ts';

/**
 * Jackson's user record, plus the enterprise extension's fields that the user has
 * (`employee_number`, `cost_center`, `organization`, `division`, `department`, `manager_id`;
 * absent when the resource has no value, as `roles`).
 */
export const userRecord = (u: DsyncUser): UserRecord => {
  const e = enterpriseOf(u.raw);
  const enterprise: Partial<Record<(typeof ENTERPRISE_FIELDS)[number]['record'], string>> = {};
  for (const f of ENTERPRISE_FIELDS) {
    const v = e[f.key];
    if (v !== null) enterprise[f.record] = v;
  }
  return {
    id: u.id,
    first_name: u.firstName,
    last_name: u.lastName,
    email: u.email ?? '',
    active: u.active,
    ...(u.roles !== undefined ? { roles: u.roles } : {}),
    ...enterprise,
    raw: u.raw,
  };
};

export const groupRecord = (g: DsyncGroup): GroupRecord => ({ id: g.id, name: g.name, raw: g.raw });

export function envelope(
  type: DirectorySyncEventType,
  directory: Pick<Directory, 'id' | 'tenant' | 'product'>,
  subject: { user?: DsyncUser; group?: DsyncGroup; userId?: string },
): DirectorySyncEvent {
  const base = { event: type, tenant: directory.tenant, product: directory.product, directory_id: directory.id };
  // A member that is not (yet) a user: what is known, its id and the group.
  if (type === 'group.user_added' && !subject.user && subject.userId && subject.group)
    return { ...base, data: { id: subject.userId, group: groupRecord(subject.group) } };
  if (type.startsWith('user.') && subject.user) return { ...base, data: userRecord(subject.user) };
  if ((type === 'group.user_added' || type === 'group.user_removed') && subject.user && subject.group)
    return { ...base, data: { ...userRecord(subject.user), group: groupRecord(subject.group) } };
  if (type.startsWith('group.') && subject.group && !subject.user) return { ...base, data: groupRecord(subject.group) };
  return base;
}

/**
 * The event as delivered: Jackson's object with its keys in Jackson's order, then gatehouse's
 * `id`, `seq` and `created_at` (see WebhookEvent).
 */
export const wireEvent = (r: {
  id: string;
  seq: number;
  createdAt: Date;
  payload: DirectorySyncEvent;
}): WebhookEvent => ({
  ...r.payload,
  id: r.id,
  seq: r.seq,
  created_at: r.createdAt.toISOString(),
});
