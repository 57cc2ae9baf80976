import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type DatabaseHandle } from '../../../src/core/db/client.ts';
import { isRetryableTxError, withTx } from '../../../src/core/db/tx.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

/**
 * Two SERIALIZABLE transactions that write-skew: each reads the sum of both accounts and
 * withdraws if the total allows it. Only one withdrawal may be applied.
 */
describe('transactions with serialization retry', () => {
  let database: TestDatabase;
  let h: DatabaseHandle;
  beforeAll(async () => {
    database = await createTestDatabase();
    h = createDatabase(database.url, { max: 4 });
    await sql`CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)`.execute(h.db);
  });
  afterAll(async () => {
    await h.destroy();
    await database.drop();
  });

  const reset = () => sql`DELETE FROM accounts; INSERT INTO accounts VALUES (1, 100), (2, 100)`.execute(h.db);

  /** Reads the total, waits for the other transaction to read too, then withdraws 150 from `id`. */
  function withdraw(id: number, barrier: { arrive(): Promise<void> }, attempts: { n: number }, retries?: number) {
    return withTx(
      h.db,
      async (trx) => {
        attempts.n++;
        const { rows } = await sql<{ total: number }>`SELECT sum(balance)::int AS total FROM accounts`.execute(trx);
        if (attempts.n === 1) await barrier.arrive();
        if ((rows[0]?.total ?? 0) >= 150) {
          await sql`UPDATE accounts SET balance = balance - 150 WHERE id = ${id}`.execute(trx);
          return 'withdrew';
        }
        return 'refused';
      },
      { isolation: 'serializable', ...(retries !== undefined ? { retries } : {}) },
    );
  }

  function barrier(parties: number) {
    let arrived = 0;
    let release!: () => void;
    const all = new Promise<void>((r) => (release = r));
    return {
      async arrive() {
        arrived++;
        if (arrived >= parties) release();
        await all;
      },
    };
  }

  it('re-runs the body after a serialization failure and applies exactly one withdrawal', async () => {
    await reset();
    const b = barrier(2);
    const a1 = { n: 0 };
    const a2 = { n: 0 };
    const results = await Promise.all([withdraw(1, b, a1), withdraw(2, b, a2)]);
    expect(results.sort()).toEqual(['refused', 'withdrew']);
    expect(a1.n + a2.n).toBe(3); // one of them ran twice
    const { rows } = await sql<{ total: number }>`SELECT sum(balance)::int AS total FROM accounts`.execute(h.db);
    expect(rows[0]?.total).toBe(50);
  });

  it('surfaces the serialization error when the attempts run out', async () => {
    await reset();
    const b = barrier(2);
    const settled = await Promise.allSettled([withdraw(1, b, { n: 0 }, 0), withdraw(2, b, { n: 0 }, 0)]);
    const rejected = settled.filter((s) => s.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect(isRetryableTxError((rejected[0] as PromiseRejectedResult).reason)).toBe(true);
    expect(((rejected[0] as PromiseRejectedResult).reason as { code: string }).code).toBe('40001');
  });

  it('does not retry other errors', async () => {
    let runs = 0;
    await expect(
      withTx(h.db, async (trx) => {
        runs++;
        await sql`SELECT 1/0`.execute(trx);
      }),
    ).rejects.toThrow(/division by zero/);
    expect(runs).toBe(1);
  });
});
