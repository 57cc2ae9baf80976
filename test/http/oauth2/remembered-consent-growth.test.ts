/**
 * The remembered-consent read of a login re-entry (store/flows.ts, confirmLogin) costs the same
 * whatever number of other consents the subject has with the client: measured in buffers of the
 * statement itself (captured from the store function and explained with its parameters, inside a
 * transaction that is rolled back), not in time.
 */
import { randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/database.ts';
import { confirmLogin } from '../../../src/oauth2/store/flows.ts';
import { DEFAULT_NETWORK_ID } from '../../../src/oauth2/tables.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

let tdb: TestDatabase;
let db: Kysely<Database>;
const captured: CompiledQuery[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: tdb.url, max: 1 });
  pool.on('error', () => {});
  db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (e) => {
      if (e.level === 'query') captured.push(e.query as CompiledQuery);
    },
  });
});
afterAll(async () => {
  await db?.destroy();
  await tdb?.drop();
});

/** `n` consents of subject/client without "remember", newer than one remembered consent. */
async function consents(subject: string, n: number) {
  await sql`insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject,
      request_url, requested_at, handled_at, session_data, remember, granted_scope)
    select ${DEFAULT_NETWORK_ID}::uuid, ${subject} || '-old', 'l', 'client-1', ${subject}, 'https://x/',
      now() - interval '1 day', now(), '{}', true, '["openid","remembered"]'::jsonb`.execute(db);
  await sql`insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject,
      request_url, requested_at, handled_at, session_data, remember)
    select ${DEFAULT_NETWORK_ID}::uuid, ${subject} || '-' || g, 'l', 'client-1', ${subject}, 'https://x/',
      now() - make_interval(secs => g), now(), '{}', false
    from generate_series(1, ${n}::int) g`.execute(db);
}

/** The buffers the login re-entry's statement touches for `subject`, and what it answered. */
async function readCost(subject: string): Promise<{ buffers: number; remembered: string[] | undefined }> {
  let out = { buffers: -1, remembered: undefined as string[] | undefined };
  await db
    .transaction()
    .execute(async (trx) => {
      captured.length = 0;
      const r = await confirmLogin(trx, {
        verifier: { id: `login:${randomUUID()}`, expiresAt: new Date(Date.now() + 60_000) },
        consentOf: { clientId: 'client-1', subject, now: new Date() },
      });
      const q = captured.at(-1) as CompiledQuery;
      const plan = await trx.executeQuery<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }>(
        CompiledQuery.raw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.sql}`, [...q.parameters]),
      );
      const top = plan.rows[0]?.['QUERY PLAN'][0].Plan as Record<string, number>;
      out = {
        buffers: (top['Shared Hit Blocks'] ?? 0) + (top['Shared Read Blocks'] ?? 0),
        remembered: r.rememberedScope,
      };
      throw new Error('rollback');
    })
    .catch((e) => {
      if ((e as Error).message !== 'rollback') throw e;
    });
  return out;
}

describe('the remembered-consent read of a login re-entry', () => {
  it('touches as many buffers with 5,000 other consents of the pair as with none', async () => {
    await consents('few', 0);
    await consents('many', 5000);
    await sql`analyze oauth2_flows`.execute(db);
    const few = await readCost('few');
    const many = await readCost('many');
    expect(few.remembered).toEqual(['openid', 'remembered']);
    expect(many.remembered).toEqual(['openid', 'remembered']);
    // Without an index of the remembered rows alone the read walks the 5,000 entries (and their rows).
    expect(many.buffers).toBeLessThanOrEqual(few.buffers + 3);
  });
});
