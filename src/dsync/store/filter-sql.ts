/**
 * Compiles a SCIM filter predicate (scim/filter.ts) to a SQL condition. Values are always bound
 * parameters; column names come from a fixed list; JSON paths are bound as text[] parameters.
 * Raw resources are stored as `json` (key order kept) and cast to jsonb here.
 */
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { ENTERPRISE_FIELDS } from '../enterprise.ts';
import type { CmpValue, FieldRef, Predicate } from '../scim/filter.ts';

type Cond = RawBuilder<SqlBool>;

export interface FilterContext {
  /** table alias of the resource (`u` or `g`) */
  alias: string;
}

const COLUMNS = new Set([
  'id',
  'external_id',
  'user_name',
  'email',
  'active',
  'name',
  ...ENTERPRISE_FIELDS.map((f) => f.column),
]);
const NUMBER = '^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$';

const TRUE: Cond = sql<SqlBool>`true`;
const FALSE: Cond = sql<SqlBool>`false`;

/** The SQL text expressions a field may match; the comparison holds when it holds for any. */
function candidates(field: FieldRef, ctx: FilterContext, elem: string | undefined): RawBuilder<string>[] {
  switch (field.kind) {
    case 'column':
      if (!COLUMNS.has(field.column)) throw new Error(`unknown filter column ${field.column}`);
      return [sql<string>`${sql.ref(`${ctx.alias}.${field.column}`)}`];
    case 'member':
      return [sql<string>`m.user_id`];
    case 'elem':
      return [sql<string>`(${sql.raw(elem ?? 'e.v')} #>> ${field.path}::text[])`];
    case 'raw':
      return [sql<string>`(${sql.raw(`${ctx.alias}.raw::jsonb`)} #>> ${field.path}::text[])`];
  }
}

function compareOne(x: RawBuilder<string>, field: FieldRef, op: string, value: CmpValue): Cond {
  const exact = field.kind === 'member' || (field.kind === 'column' && field.exact);
  const ci = !exact && typeof value === 'string';
  const l = ci ? sql<string>`lower(${x})` : x;
  if (field.kind === 'column' && field.type === 'bool') {
    return op === 'eq' ? sql<SqlBool>`${x} = ${value}` : sql<SqlBool>`${x} is distinct from ${value}`;
  }
  if (value === null) return op === 'ne' ? sql<SqlBool>`${x} is not null` : sql<SqlBool>`${x} is null`;
  if (typeof value === 'number') {
    const n = sql<number>`(case when ${x} ~ ${NUMBER} then (${x})::numeric end)`;
    const ops: Record<string, Cond> = {
      eq: sql<SqlBool>`${n} = ${value}`,
      ne: sql<SqlBool>`${n} is distinct from ${value}`,
      gt: sql<SqlBool>`${n} > ${value}`,
      ge: sql<SqlBool>`${n} >= ${value}`,
      lt: sql<SqlBool>`${n} < ${value}`,
      le: sql<SqlBool>`${n} <= ${value}`,
    };
    return ops[op] ?? FALSE;
  }
  const v = typeof value === 'boolean' ? String(value) : ci ? value.toLowerCase() : value;
  switch (op) {
    case 'eq':
      return sql<SqlBool>`${l} = ${v}::text`;
    case 'ne':
      return sql<SqlBool>`${l} is distinct from ${v}::text`;
    case 'co':
      return sql<SqlBool>`strpos(${l}, ${v}::text) > 0`;
    case 'sw':
      // left() rather than starts_with(), which CockroachDB does not document.
      return sql<SqlBool>`left(${l}, length(${v}::text)) = ${v}::text`;
    case 'ew':
      return sql<SqlBool>`right(${l}, length(${v}::text)) = ${v}::text`;
    case 'gt':
      return sql<SqlBool>`${l} > ${v}::text`;
    case 'ge':
      return sql<SqlBool>`${l} >= ${v}::text`;
    case 'lt':
      return sql<SqlBool>`${l} < ${v}::text`;
    case 'le':
      return sql<SqlBool>`${l} <= ${v}::text`;
    default:
      return FALSE;
  }
}

/** `a.b` on a raw resource also matches `b` of any element when `a` is an array (RFC 7644 §3.4.2.2). */
function overArray(field: FieldRef, ctx: FilterContext, build: (x: RawBuilder<string>) => Cond): Cond | undefined {
  if (field.kind !== 'raw' || field.path.length < 2) return undefined;
  const [head, ...rest] = field.path;
  const arr = sql`(case when jsonb_typeof(${sql.raw(`${ctx.alias}.raw::jsonb`)} -> ${head}) = 'array' then ${sql.raw(`${ctx.alias}.raw::jsonb`)} -> ${head} else '[]'::jsonb end)`;
  const x = sql<string>`(a.v #>> ${rest}::text[])`;
  return sql<SqlBool>`exists (select 1 from jsonb_array_elements(${arr}) as a(v) where ${build(x)})`;
}

function leaf(field: FieldRef, ctx: FilterContext, elem: string | undefined, build: (x: RawBuilder<string>) => Cond) {
  const conds = candidates(field, ctx, elem).map(build);
  const arr = overArray(field, ctx, build);
  if (arr) conds.push(arr);
  return conds.length === 1 ? (conds[0] as Cond) : sql<SqlBool>`(${sql.join(conds, sql` or `)})`;
}

export function predicateSql(p: Predicate, ctx: FilterContext, elem?: string): Cond {
  switch (p.kind) {
    case 'cmp':
      return leaf(p.field, ctx, elem, (x) => compareOne(x, p.field, p.op, p.value));
    case 'pr':
      if (p.field.kind === 'column' && p.field.type === 'bool') return TRUE;
      return leaf(p.field, ctx, elem, (x) => sql<SqlBool>`(${x} is not null and ${x} not in ('', '[]', '{}'))`);
    case 'and':
    case 'or':
      if (!p.items.length) return p.kind === 'and' ? TRUE : FALSE;
      return sql<SqlBool>`(${sql.join(
        p.items.map((i) => predicateSql(i, ctx, elem)),
        p.kind === 'and' ? sql` and ` : sql` or `,
      )})`;
    case 'not':
      return sql<SqlBool>`not coalesce(${predicateSql(p.item, ctx, elem)}, false)`;
    case 'any': {
      const raw = sql.raw(`${ctx.alias}.raw::jsonb`);
      const arr = sql`(case when jsonb_typeof(${raw} #> ${p.array}::text[]) = 'array' then ${raw} #> ${p.array}::text[] else '[]'::jsonb end)`;
      return sql<SqlBool>`exists (select 1 from jsonb_array_elements(${arr}) as e(v) where ${predicateSql(p.where, ctx, 'e.v')})`;
    }
    case 'members':
      return sql<SqlBool>`exists (select 1 from dsync_group_members m where m.directory_id = ${sql.ref(`${ctx.alias}.directory_id`)} and m.group_id = ${sql.ref(`${ctx.alias}.id`)} and ${predicateSql(p.where, ctx, elem)})`;
  }
}
