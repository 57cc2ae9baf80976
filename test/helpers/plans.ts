/**
 * Query plans of what a store function really runs: its statements are captured through kysely's
 * query log and explained with their parameters in the same session, inside a transaction that is
 * rolled back (sequential scans off: test tables are small).
 */
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/database.ts';

export interface PlanCapture {
  /** The plans of the DELETE statements `run` issues. */
  plansOf(run: (trx: Kysely<Database>) => Promise<unknown>): Promise<string[]>;
  destroy(): Promise<void>;
}

export function createPlanCapture(url: string): PlanCapture {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {});
  const captured: CompiledQuery[] = [];
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (e) => {
      if (e.level === 'query') captured.push(e.query as CompiledQuery);
    },
  });
  return {
    async plansOf(run) {
      const plans: string[] = [];
      await db
        .transaction()
        .execute(async (trx) => {
          await sql`SET LOCAL enable_seqscan = off`.execute(trx);
          captured.length = 0;
          await run(trx);
          for (const q of captured.filter((x) => /^delete/i.test(x.sql))) {
            const r = await trx.executeQuery<{ 'QUERY PLAN': string }>(
              CompiledQuery.raw(`EXPLAIN ${q.sql}`, [...q.parameters]),
            );
            plans.push(r.rows.map((x) => x['QUERY PLAN']).join('\n'));
          }
          throw new Error('rollback');
        })
        .catch((e) => {
          if ((e as Error).message !== 'rollback') throw e;
        });
      return plans;
    },
    destroy: () => db.destroy(),
  };
}
