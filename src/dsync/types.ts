/**
 * Domain types of directory sync and the Jackson wire shapes they map to.
 * Domain objects are camelCase; the wire objects keep Jackson's snake_case names exactly.
 */

/** Jackson's provider keys and labels (`providers()`). */
export const DIRECTORY_TYPES = {
  'azure-scim-v2': 'Entra ID SCIM v2.0',
  'onelogin-scim-v2': 'OneLogin SCIM v2.0',
  'okta-scim-v2': 'Okta SCIM v2.0',
  'jumpcloud-scim-v2': 'JumpCloud v2.0',
  'generic-scim-v2': 'Generic SCIM v2.0',
  google: 'Google',
} as const;

export type DirectoryType = keyof typeof DIRECTORY_TYPES;

export const isDirectoryType = (t: unknown): t is DirectoryType =>
  typeof t === 'string' && Object.hasOwn(DIRECTORY_TYPES, t);

/** Cloud directories are synced by gatehouse itself and never accept SCIM traffic (they have no secret). */
export const isScimType = (t: DirectoryType): boolean => t !== 'google';

/** A directory with its secrets opened. */
export interface Directory {
  id: string;
  name: string;
  tenant: string;
  product: string;
  type: DirectoryType;
  logWebhookEvents: boolean;
  deactivated: boolean;
  webhook: { endpoint: string; secret: string };
  scim: { path: string; secret: string };
  googleAccessToken: string;
  googleRefreshToken: string;
  /** The Workspace's domain ('' until known). */
  googleDomain: string;
  /** The Workspace (Google `customerId`) the tokens belong to ('' until an authorization recorded it). */
  googleCustomerId: string;
  /** When the stored access token expires; null when unknown (tokens set by hand). */
  googleAccessTokenExpiresAt: Date | null;
  /** Google Workspace: the groups a sync is limited to (emails or ids); empty: all groups and users. */
  googleGroups: string[];
  createdAt: Date;
}

/** Jackson's directory record with its computed fields. */
export interface DirectoryRecord {
  id: string;
  name: string;
  tenant: string;
  product: string;
  type: DirectoryType;
  log_webhook_events: boolean;
  webhook: { endpoint: string; secret: string };
  scim: { path: string; secret: string; endpoint?: string };
  google_domain?: string;
  google_access_token?: string;
  google_refresh_token?: string;
  /** Google Workspace: the groups a sync is limited to (emails or ids); empty: all. */
  google_groups?: string[];
  deactivated: boolean;
  google_authorization_url?: string;
}

export type Raw = Record<string, unknown>;

/** A stored SCIM user. */
export interface DsyncUser {
  directoryId: string;
  id: string;
  userName: string | null;
  externalId: string | null;
  email: string | null;
  firstName: string;
  lastName: string;
  active: boolean;
  /** undefined: the user has no roles (Jackson then leaves `roles` out of records and events). */
  roles: unknown[] | undefined;
  raw: Raw;
}

/** A stored SCIM group. */
export interface DsyncGroup {
  directoryId: string;
  id: string;
  name: string;
  externalId: string | null;
  raw: Raw;
}

/** Jackson's user projection (events, controller, v1 API). */
export interface UserRecord {
  id: string;
  first_name: string;
  last_name: string;
  email: string;
  active: boolean;
  roles?: unknown[];
  /** The enterprise extension's values the user has (src/dsync/enterprise.ts), absent otherwise. */
  employee_number?: string;
  cost_center?: string;
  organization?: string;
  division?: string;
  department?: string;
  manager_id?: string;
  raw: Raw;
}

export interface GroupRecord {
  id: string;
  name: string;
  raw: Raw;
}

export type DirectorySyncEventType =
  | 'user.created'
  | 'user.updated'
  | 'user.deleted'
  | 'group.created'
  | 'group.updated'
  | 'group.deleted'
  | 'group.user_added'
  | 'group.user_removed';

/** The event as Jackson serialises it: key order `{event, tenant, product, directory_id, data}`. */
export interface DirectorySyncEvent {
  event: DirectorySyncEventType;
  tenant: string;
  product: string;
  directory_id: string;
  data?: UserRecord | GroupRecord | (UserRecord & { group: GroupRecord }) | { id: string; group: GroupRecord };
}

/**
 * An event as delivered (webhook body, batch array element, callback argument): Jackson's fields
 * unchanged, then gatehouse's `id` (stable across retries, for de-duplication), `seq` (per
 * directory, gap-free, in commit order) and `created_at` (ISO 8601, when the change was made).
 */
export interface WebhookEvent extends DirectorySyncEvent {
  id: string;
  seq: number;
  created_at: string;
}

export type EventCallback = (event: WebhookEvent) => unknown;

/** `requests.handle` input. */
export interface DirectorySyncRequest {
  method: string;
  body?: unknown;
  directoryId: string;
  resourceType: string;
  resourceId?: string | undefined;
  apiSecret: string | null | undefined;
  query?: { count?: number | undefined; startIndex?: number | undefined; filter?: string | undefined };
}

export interface DirectorySyncResponse {
  status: number;
  data?: unknown;
}

/** What a management read is scoped to: a tenant+product and, optionally, one of its directories. */
export interface Scope {
  tenant: string;
  product: string;
  directoryId?: string | undefined;
}

/** A scope as callers give it: tenant+product, or a directoryId (v1 routes accept either). */
export interface ScopeQuery {
  tenant?: unknown;
  product?: unknown;
  directoryId?: unknown;
}

/** Jackson's page parameters (`pageToken` is accepted and ignored: offsets are exact here). */
export interface PageParams {
  pageOffset?: number | undefined;
  pageLimit?: number | undefined;
  pageToken?: string | undefined;
}

/** Jackson's `db.pageLimit` default: the default and the largest page of any list (`dsync.page_limit`). */
export const PAGE_LIMIT = 50;

export function page(p: PageParams = {}, max = PAGE_LIMIT): { offset: number; limit: number } {
  const offset =
    Number.isInteger(p.pageOffset) && (p.pageOffset as number) > 0 ? Math.min(p.pageOffset as number, 2 ** 31) : 0;
  const raw = Number.isInteger(p.pageLimit) ? (p.pageLimit as number) : 0;
  return { offset, limit: raw > 0 && raw <= max ? raw : max };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID.test(v);
/** A directory id for a query: ids that are not UUIDs match nothing instead of failing the uuid cast. */
export const directoryIdOrNil = (v: string): string =>
  isUuid(v) ? v.toLowerCase() : '00000000-0000-0000-0000-000000000000';
