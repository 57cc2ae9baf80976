/**
 * Marked statements (src/core/db/prepared.ts) become named prepared statements of the session on a
 * direct PostgreSQL connection, and only they; the authorization-code flow's marked statements are
 * among them. (Through PgBouncer in transaction mode they stay unnamed: test/http/core/pgbouncer.test.ts.)
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type DatabaseHandle } from '../../../src/core/db/client.ts';
import { PREPARED } from '../../../src/core/db/prepared.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

describe('prepared marked statements', () => {
  let tdb: TestDatabase;
  let h: DatabaseHandle;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    // One connection: every statement below runs in the same session as the catalogue read.
    h = createDatabase(tdb.url, { max: 1 });
  });
  afterAll(async () => {
    await h?.destroy();
    await tdb?.drop();
  });

  const preparedInSession = async () =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(h.db))
      .rows;

  it('names a marked statement once the connection is known to be direct, and no other', async () => {
    await sql`select 1`.execute(h.db); // connects; the direct-session check is queued first
    for (let i = 0; i < 7; i++) {
      const { rows } = await sql<{ n: number }>`${PREPARED}select ${i}::int + 1 as n`.execute(h.db);
      expect(rows[0]?.n).toBe(i + 1);
      await sql<{ n: number }>`select ${i}::int + 2 as n`.execute(h.db);
    }
    const held = await preparedInSession();
    expect(held).toHaveLength(1);
    expect(held[0]?.name).toMatch(/^gh_[A-Za-z0-9_-]{22}$/);
    expect(held[0]?.statement).toBe('/* prepared */ select $1::int + 1 as n');
  });

  it("keeps one prepared statement per text, and reports a marked statement's error as any other", async () => {
    await sql`${PREPARED}select ${'a'}::text as t`.execute(h.db);
    await sql`${PREPARED}select ${'b'}::text as t`.execute(h.db);
    expect((await preparedInSession()).length).toBe(2);
    await expect(sql`${PREPARED}select ${'x'}::int as n`.execute(h.db)).rejects.toThrow(/invalid input syntax/);
    // The session is still usable and the statements still run.
    expect((await sql<{ t: string }>`${PREPARED}select ${'c'}::text as t`.execute(h.db)).rows[0]?.t).toBe('c');
  });
});
