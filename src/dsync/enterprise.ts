/**
 * The enterprise extension of a SCIM user (RFC 7643 §4.3): the attributes gatehouse reads from a
 * stored resource, under the extension's schema URN. They become columns of dsync_users (filters
 * find users by them, sql/0290) and fields of the user record and its events (events/payload.ts).
 * Read from the resource as stored (`raw`), so that every writer (SCIM POST, PUT and PATCH — which
 * keeps URN paths whole —, the controller's writes) gets them the same way.
 */
import type { Raw } from './types.ts';

export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export interface Enterprise {
  employeeNumber: string | null;
  costCenter: string | null;
  organization: string | null;
  division: string | null;
  department: string | null;
  /** `manager.value`: the id of the user's manager. */
  managerId: string | null;
}

/** The enterprise fields as the user record (and its events) name them, and the column of each. */
export const ENTERPRISE_FIELDS = [
  { key: 'employeeNumber', record: 'employee_number', column: 'employee_number', exact: true },
  { key: 'costCenter', record: 'cost_center', column: 'cost_center', exact: false },
  { key: 'organization', record: 'organization', column: 'organization', exact: false },
  { key: 'division', record: 'division', column: 'division', exact: false },
  { key: 'department', record: 'department', column: 'department', exact: false },
  { key: 'managerId', record: 'manager_id', column: 'manager_id', exact: true },
] as const satisfies ReadonlyArray<{ key: keyof Enterprise; record: string; column: string; exact: boolean }>;

const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null =>
  typeof v === 'string' ? v || null : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;

export function enterpriseOf(raw: Raw): Enterprise {
  const e = isObject(raw[ENTERPRISE_USER]) ? raw[ENTERPRISE_USER] : {};
  return {
    employeeNumber: text(e.employeeNumber),
    costCenter: text(e.costCenter),
    organization: text(e.organization),
    division: text(e.division),
    department: text(e.department),
    managerId: isObject(e.manager) ? text(e.manager.value) : null,
  };
}
