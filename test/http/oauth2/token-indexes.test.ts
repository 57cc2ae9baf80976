/**
 * The (nid, subject, client_id) indexes of the access- and refresh-token tables:
 * built CONCURRENTLY by no-transaction migrations, valid, and used by the deletes that consent
 * session revocation runs. The queries are captured from the store function itself and explained
 * with their parameters in the same session (sequential scans off: the test tables are small).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrationFiles } from '../../../src/core/db/migrate.ts';
import { deleteTokensOfSubject } from '../../../src/oauth2/store/tokens.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { createPlanCapture, type PlanCapture } from '../../helpers/plans.ts';
import { codeTokens, isActive } from '../../helpers/tokens.ts';

const INDEXES = {
  oauth2_access_tokens: 'oauth2_access_tokens_subject_client_idx',
  oauth2_refresh_tokens: 'oauth2_refresh_tokens_subject_client_idx',
} as const;

let t: TestServer;
let capture: PlanCapture;
beforeAll(async () => {
  t = await startTestServer();
  capture = createPlanCapture(t.database.url);
});
afterAll(async () => {
  await capture?.destroy();
  await t?.close();
});

/** The plans of the statements `deleteTokensOfSubject` runs, inside a rolled-back transaction. */
const plansOf = (subject: string, clientId?: string) =>
  capture.plansOf((trx) => deleteTokensOfSubject(trx, undefined, subject, clientId));

describe('(nid, subject, client_id) token indexes', () => {
  it('are created concurrently by no-transaction, required-by-code migrations', () => {
    const files = listMigrationFiles().filter((f) => /CREATE INDEX CONCURRENTLY/i.test(f.up));
    for (const name of Object.values(INDEXES)) {
      const f = files.find((x) => x.up.includes(name));
      expect(f?.transactional).toBe(false);
      expect(f?.requiredByCode).toBe(true);
      expect(f?.up).toMatch(/IF NOT EXISTS/);
    }
  });

  it('exist, are valid, and cover (nid, subject, client_id)', async () => {
    const { rows } = await sql<{ name: string; valid: boolean; def: string }>`
      select c.relname as name, i.indisvalid as valid, pg_get_indexdef(i.indexrelid) as def
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where c.relname in (${INDEXES.oauth2_access_tokens}, ${INDEXES.oauth2_refresh_tokens})
      order by c.relname`.execute(t.container.db);
    expect(rows.map((r) => [r.name, r.valid])).toEqual([
      [INDEXES.oauth2_access_tokens, true],
      [INDEXES.oauth2_refresh_tokens, true],
    ]);
    for (const r of rows) expect(r.def).toMatch(/\(nid, subject, client_id\)$/);
  });

  it('serve the deletes of consent-session revocation, with and without a client', async () => {
    const client = await createClient(t);
    await codeTokens(t, client);
    // Other subjects' tokens — half of them issued to this client, as a client serves many users —
    // and fresh statistics, so the planner sees how selective the index is next to the other
    // indexes on these tables (primary key, request id, expiry, and (nid, client_id) of sql/0055).
    for (const table of ['oauth2_access_tokens', 'oauth2_refresh_tokens'] as const) {
      await sql`insert into ${sql.table(table)} (nid, signature, request_id, client_id, subject, requested_at, expires_at, session_data)
        select '00000000-0000-4000-8000-000000000000', 'seed-' || g, 'req-' || g,
          case when g % 2 = 0 then ${client.client_id} else 'client-' || (g % 20) end,
          'subject-' || (g % 300), now(), now() + (g % 97) * interval '1 minute', ''
        from generate_series(1, 3000) as g`.execute(t.container.db);
      await sql`analyze ${sql.table(table)}`.execute(t.container.db);
    }
    for (const plans of [await plansOf('alice', client.client_id), await plansOf('alice')]) {
      expect(plans).toHaveLength(2);
      expect(plans[0]).toContain(INDEXES.oauth2_access_tokens);
      expect(plans[1]).toContain(INDEXES.oauth2_refresh_tokens);
    }
  });

  it('consent-session revocation by subject and client ends the tokens it finds through them', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client, 'openid offline', {}, 'zoe');
    const r = await fetch(
      `${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=zoe&client=${encodeURIComponent(client.client_id)}`,
      { method: 'DELETE' },
    );
    expect(r.status).toBe(204);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    expect(await isActive(t, tok.refresh_token as string)).toBe(false);
  });
});
