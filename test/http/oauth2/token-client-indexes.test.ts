/**
 * The (nid, client_id) indexes of access tokens, refresh tokens and authorization codes (sql/0055):
 * built CONCURRENTLY by a no-transaction, required-by-code migration, valid, and used by the deletes
 * that `DELETE /admin/oauth2/tokens?client_id=` and client deletion run. The statements are captured
 * from the store functions themselves and explained with their parameters in the same session, over
 * tables with realistic statistics (sequential scans off as well: the test tables are small).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrationFiles } from '../../../src/core/db/migrate.ts';
import { deleteAccessTokensOfClient, deleteTokensOfClient } from '../../../src/oauth2/store/token-families.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { createPlanCapture, type PlanCapture } from '../../helpers/plans.ts';
import { codeTokens, isActive } from '../../helpers/tokens.ts';

const INDEXES = {
  oauth2_access_tokens: 'oauth2_access_tokens_client_idx',
  oauth2_refresh_tokens: 'oauth2_refresh_tokens_client_idx',
  oauth2_authorization_codes: 'oauth2_authorization_codes_client_idx',
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

const plansOf = (run: Parameters<PlanCapture['plansOf']>[0]) => capture.plansOf(run);

describe('(nid, client_id) token indexes', () => {
  it('are created concurrently by a no-transaction, required-by-code migration', () => {
    for (const name of Object.values(INDEXES)) {
      const f = listMigrationFiles().find((x) => x.up.includes(name));
      expect(f?.file).toBe('0055_oauth2_tokens_client_idx.sql');
      expect(f?.transactional).toBe(false);
      expect(f?.requiredByCode).toBe(true);
      expect(f?.up).toMatch(new RegExp(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name}\\b`));
    }
  });

  it('exist, are valid, and cover (nid, client_id)', async () => {
    const { rows } = await sql<{ name: string; valid: boolean; def: string }>`
      select c.relname as name, i.indisvalid as valid, pg_get_indexdef(i.indexrelid) as def
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where c.relname in (${sql.join(Object.values(INDEXES))})
      order by c.relname`.execute(t.container.db);
    expect(rows.map((r) => [r.name, r.valid])).toEqual(
      Object.values(INDEXES)
        .sort()
        .map((n) => [n, true]),
    );
    for (const r of rows) expect(r.def).toMatch(/\(nid, client_id\)$/);
  });

  it('serve the deletes of DELETE /admin/oauth2/tokens?client_id= and of client deletion', async () => {
    const client = await createClient(t);
    await codeTokens(t, client);
    // Other clients' rows and fresh statistics, so the planner weighs this index against the others
    // on these tables (primary key, request id, subject/client, expiry).
    for (const table of Object.keys(INDEXES) as (keyof typeof INDEXES)[]) {
      await sql`insert into ${sql.table(table)} (nid, signature, request_id, client_id, subject, requested_at, expires_at, session_data)
        select '00000000-0000-4000-8000-000000000000', 'seed-' || g, 'req-' || g, 'client-' || (g % 200),
          'subject-' || (g % 300), now(), now() + (g % 97) * interval '1 minute', ''
        from generate_series(1, 3000) as g`.execute(t.container.db);
      await sql`analyze ${sql.table(table)}`.execute(t.container.db);
    }
    const revokeAll = await plansOf((trx) => deleteAccessTokensOfClient(trx, client.client_id, undefined));
    expect(revokeAll).toHaveLength(1);
    expect(revokeAll[0]).toContain(INDEXES.oauth2_access_tokens);

    const clientGone = await plansOf((trx) => deleteTokensOfClient(trx, client.client_id, undefined));
    expect(clientGone).toHaveLength(3);
    expect(clientGone[0]).toContain(INDEXES.oauth2_access_tokens);
    expect(clientGone[1]).toContain(INDEXES.oauth2_refresh_tokens);
    expect(clientGone[2]).toContain(INDEXES.oauth2_authorization_codes);
  });

  it('the admin token deletion ends the client’s access tokens', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    const r = await fetch(`${t.adminUrl}/admin/oauth2/tokens?client_id=${encodeURIComponent(client.client_id)}`, {
      method: 'DELETE',
    });
    expect(r.status).toBe(204);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
  });
});
