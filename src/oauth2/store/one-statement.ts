/**
 * Writes that must happen together, as ONE statement (one round trip, atomic without a
 * transaction): data-modifying CTEs, each row inserted only when the CTE it depends on produced one.
 * `insertFrom(table, values, from)` is `INSERT INTO table (cols) SELECT $1, $2, … FROM from`;
 * PostgreSQL types the parameters from the target columns, as for `VALUES`. `insertValues(table,
 * values)` is the unconditional `INSERT INTO table (cols) VALUES ($1, $2, …)`.
 */
import { type RawBuilder, sql } from 'kysely';

export function insertFrom(table: string, values: Record<string, unknown>, from: string): RawBuilder<unknown> {
  const cols = Object.keys(values);
  return sql`insert into ${sql.table(table)} (${sql.join(cols.map((c) => sql.ref(c)))})
    select ${sql.join(cols.map((c) => sql`${values[c]}`))} from ${sql.table(from)}`;
}

export function insertValues(table: string, values: Record<string, unknown>): RawBuilder<unknown> {
  const cols = Object.keys(values);
  return sql`insert into ${sql.table(table)} (${sql.join(cols.map((c) => sql.ref(c)))})
    values (${sql.join(cols.map((c) => sql`${values[c]}`))})`;
}
