/**
 * SCIM filters (RFC 7644 §3.4.2.2), parsed with `scim2-parse-filter` and turned into a small
 * predicate tree that the store compiles to SQL. Unlike Jackson the attribute and the
 * operator are honoured, matches are on current values, and a malformed filter is a
 * 400 `invalidFilter` (RFC 7644 §3.4.2.2), never a 500.
 *
 * Attribute names are case-insensitive (RFC 7643 §2.1). String comparisons are case-insensitive
 * except for `id` and `externalId`, which RFC 7643 defines as case-exact. `userName eq "…"` also
 * matches the user's primary email: Jackson looked users up by email, and identity providers
 * linked against Jackson rely on that.
 */
import { type Filter, parse } from 'scim2-parse-filter';
import { ENTERPRISE_FIELDS, ENTERPRISE_USER } from '../enterprise.ts';
import { scimError } from '../errors.ts';

export type CmpOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type CmpValue = string | number | boolean | null;

export type FieldRef =
  /** a column of the resource table */
  | { kind: 'column'; column: string; exact: boolean; type: 'text' | 'bool' }
  /** an attribute of the raw SCIM resource; `a.b` also looks into the elements of an array `a` */
  | { kind: 'raw'; path: string[]; exact: boolean }
  /** an attribute of the array element inside `attr[…]` */
  | { kind: 'elem'; path: string[]; exact: boolean }
  /** the user id of a group member inside `members[…]` */
  | { kind: 'member' };

export type Predicate =
  | { kind: 'cmp'; field: FieldRef; op: CmpOp; value: CmpValue }
  | { kind: 'pr'; field: FieldRef }
  | { kind: 'and' | 'or'; items: Predicate[] }
  | { kind: 'not'; item: Predicate }
  | { kind: 'any'; array: string[]; where: Predicate }
  | { kind: 'members'; where: Predicate };

export type ResourceKind = 'users' | 'groups';

const MAX_LENGTH = 2048;
const MAX_NODES = 32;
const CORE_URN = /^urn:ietf:params:scim:schemas:core:2\.0:(user|group):/i;
const DANGEROUS = new Set(['__proto__', 'prototype', 'constructor']);

const invalid = (detail: string) => scimError(400, detail, 'invalidFilter');

/** The enterprise extension's attributes (`urn:…:enterprise:2.0:User:department`), filtered on their columns. */
const ENTERPRISE_KEYS = new Map<string, { column: string; exact: boolean }>([
  ...ENTERPRISE_FIELDS.filter((f) => f.key !== 'managerId').map(
    (f) => [`${ENTERPRISE_USER}.${f.key}`.toLowerCase(), f] as const,
  ),
  [`${ENTERPRISE_USER}.manager.value`.toLowerCase(), { column: 'manager_id', exact: true }],
  [`${ENTERPRISE_USER}.manager`.toLowerCase(), { column: 'manager_id', exact: true }],
]);

/** Splits an attribute path: `urn:…:User:manager.value` → [`urn:…:User`, `manager`, `value`]. */
export function attributePath(attr: string): string[] {
  const bare = attr.replace(CORE_URN, '');
  let parts: string[];
  if (bare.includes(':')) {
    const i = bare.lastIndexOf(':');
    parts = [bare.slice(0, i), ...bare.slice(i + 1).split('.')];
  } else parts = bare.split('.');
  if (parts.some((p) => p === '' || DANGEROUS.has(p))) throw invalid(`Invalid attribute path "${attr}".`);
  return parts;
}

const col = (column: string, exact: boolean, type: 'text' | 'bool' = 'text'): FieldRef => ({
  kind: 'column',
  column,
  exact,
  type,
});

function compare(field: FieldRef, op: string, value: CmpValue): Predicate {
  if (!['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le'].includes(op)) throw invalid(`Unknown operator "${op}".`);
  const cmp = op as CmpOp;
  if ((cmp === 'co' || cmp === 'sw' || cmp === 'ew') && typeof value !== 'string')
    throw invalid(`"${op}" needs a string value.`);
  if (['gt', 'ge', 'lt', 'le'].includes(cmp) && typeof value !== 'string' && typeof value !== 'number')
    throw invalid(`"${op}" needs a string or number value.`);
  if (field.kind === 'column' && field.type === 'bool') {
    const b = typeof value === 'string' ? { true: true, false: false }[value.toLowerCase()] : value;
    if ((cmp !== 'eq' && cmp !== 'ne') || typeof b !== 'boolean')
      throw invalid('"active" compares with true or false.');
    return { kind: 'cmp', field, op: cmp, value: b };
  }
  return { kind: 'cmp', field, op: cmp, value };
}

function topLevel(kind: ResourceKind, attr: string, op: string, value: CmpValue | undefined): Predicate {
  const path = attributePath(attr);
  const key = path.join('.').toLowerCase();
  const build = (field: FieldRef): Predicate =>
    op === 'pr' ? { kind: 'pr', field } : compare(field, op, value ?? null);
  if (key === 'id') return build(col('id', true));
  if (key === 'externalid') return build(col('external_id', true));
  if (kind === 'users') {
    if (key === 'username') {
      const byName = build(col('user_name', false));
      return op === 'eq' ? { kind: 'or', items: [byName, build(col('email', false))] } : byName;
    }
    if (key === 'email') return build(col('email', false));
    if (key === 'active') return build(col('active', true, 'bool'));
    if (key === 'emails') return build({ kind: 'raw', path: ['emails', 'value'], exact: false });
    const enterprise = ENTERPRISE_KEYS.get(key);
    if (enterprise) return build(col(enterprise.column, enterprise.exact));
  } else {
    if (key === 'displayname') return build(col('name', false));
    if (key === 'members' || key === 'members.value') return { kind: 'members', where: build({ kind: 'member' }) };
  }
  return build({ kind: 'raw', path, exact: false });
}

function inElement(kind: ResourceKind, array: string, attr: string, op: string, value: CmpValue | undefined) {
  if (kind === 'groups' && array === 'members') {
    if (attr.toLowerCase() !== 'value') throw invalid('Only "value" can be filtered inside members[…].');
    return op === 'pr'
      ? { kind: 'pr' as const, field: { kind: 'member' as const } }
      : compare({ kind: 'member' }, op, value ?? null);
  }
  const field: FieldRef = { kind: 'elem', path: attributePath(attr), exact: false };
  return op === 'pr' ? { kind: 'pr' as const, field } : compare(field, op, value ?? null);
}

function convert(f: Filter, kind: ResourceKind, array: string | undefined, budget: { nodes: number }): Predicate {
  if (++budget.nodes > MAX_NODES) throw invalid('The filter is too complex.');
  switch (f.op) {
    case 'and':
    case 'or':
      return { kind: f.op, items: f.filters.map((x) => convert(x, kind, array, budget)) };
    case 'not':
      return { kind: 'not', item: convert(f.filter, kind, array, budget) };
    case '[]': {
      if (array !== undefined) throw invalid('Nested value filters are not supported.');
      const path = attributePath(f.attrPath);
      const name = path.join('.');
      const where = convert(
        f.valFilter,
        kind,
        kind === 'groups' && name.toLowerCase() === 'members' ? 'members' : name,
        budget,
      );
      if (kind === 'groups' && name.toLowerCase() === 'members') return { kind: 'members', where };
      return { kind: 'any', array: path, where };
    }
    default: {
      const value = 'compValue' in f ? f.compValue : undefined;
      return array === undefined
        ? topLevel(kind, f.attrPath, f.op, value)
        : inElement(kind, array, f.attrPath, f.op, value);
    }
  }
}

/** Parses a SCIM filter for `/Users` or `/Groups`. Throws 400 `invalidFilter`. */
export function parseScimFilter(filter: string, kind: ResourceKind): Predicate {
  if (filter.length > MAX_LENGTH) throw invalid('The filter is too long.');
  if (filter.includes('\u0000')) throw invalid('The filter contains a NUL character.');
  let ast: Filter;
  try {
    ast = parse(filter);
  } catch {
    throw invalid(`The filter "${filter.slice(0, 200)}" is not a valid SCIM filter.`);
  }
  return convert(ast, kind, undefined, { nodes: 0 });
}
