import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type DatabaseHandle } from '../../../src/core/db/client.ts';
import { TABLE_COLUMNS } from '../../../src/database.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

describe('the table types (src/database.ts) match the migrated database', () => {
  let database: TestDatabase;
  let h: DatabaseHandle;
  beforeAll(async () => {
    database = await createTestDatabase();
    h = createDatabase(database.url, { max: 1 });
  });
  afterAll(async () => {
    await h.destroy();
    await database.drop();
  });

  it('lists every table and column of the public schema', async () => {
    const { rows } = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.columns
      where table_schema = 'public' and table_name <> 'gatehouse_schema_migrations'
      order by table_name, ordinal_position`.execute(h.db);
    const actual: Record<string, string[]> = {};
    for (const r of rows) (actual[r.table_name] ??= []).push(r.column_name);
    const expected = Object.fromEntries(Object.entries(TABLE_COLUMNS).map(([t, cols]) => [t, [...cols].sort()]));
    expect(Object.fromEntries(Object.entries(actual).map(([t, cols]) => [t, cols.sort()]))).toEqual(expected);
  });
});
