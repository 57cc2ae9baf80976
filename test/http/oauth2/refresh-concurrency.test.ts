/**
 * Twenty parallel refreshes of one refresh token : never a 500 or
 * a serialization error; exactly as many successes as the rotation rule allows; every other
 * request a clean `invalid_grant`.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { codeTokens, isActive, refresh } from '../../helpers/tokens.ts';

const PARALLEL = 20;

async function burst(t: TestServer) {
  const client = await createClient(t);
  const tok = await codeTokens(t, client);
  const replies = await Promise.all(
    Array.from({ length: PARALLEL }, () => refresh(t, client, tok.refresh_token as string)),
  );
  const ok = replies.filter((r) => r.status === 200);
  const failed = replies.filter((r) => r.status !== 200);
  for (const r of failed) {
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_grant');
    expect(JSON.stringify(r.body)).not.toMatch(/serializ|concurrent|could not/i);
  }
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from oauth2_refresh_tokens
    where client_id = ${client.client_id} and active`.execute(t.container.db);
  return { client, ok, failed, activeRefreshRows: rows[0]?.n ?? 0 };
}

const servers: TestServer[] = [];
const server = async (overrides: Record<string, unknown>) => {
  const t = await startTestServer({ overrides });
  servers.push(t);
  return t;
};
afterAll(async () => {
  for (const t of servers) await t.close();
});

describe('20 parallel refreshes of one token', () => {
  let strict: TestServer;
  let unlimited: TestServer;
  let counted: TestServer;
  beforeAll(async () => {
    strict = await server({});
    unlimited = await server({ 'oauth2.grant.refresh_token.rotation_grace_period': '5m' });
    counted = await server({
      'oauth2.grant.refresh_token.rotation_grace_period': '1h',
      'oauth2.grant.refresh_token.rotation_grace_reuse_count': 3,
    });
  });

  it('without a grace period: exactly one succeeds, and the reuses revoke what it got', async () => {
    const r = await burst(strict);
    expect(r.ok).toHaveLength(1);
    expect(r.failed).toHaveLength(PARALLEL - 1);
    expect(r.activeRefreshRows).toBe(0);
    expect(await isActive(strict, r.ok[0]?.body.refresh_token)).toBe(false);
  });

  it('with a grace period and no reuse count (N=0): all twenty succeed', async () => {
    const r = await burst(unlimited);
    expect(r.ok).toHaveLength(PARALLEL);
    expect(new Set(r.ok.map((x) => x.body.refresh_token)).size).toBe(PARALLEL);
    expect(r.activeRefreshRows).toBe(PARALLEL);
    expect((await refresh(unlimited, r.client, r.ok[7]?.body.refresh_token)).status).toBe(200);
  });

  it('with a reuse count of 3: exactly three succeed, then the reuse revokes the grant', async () => {
    const r = await burst(counted);
    expect(r.ok).toHaveLength(3);
    expect(r.failed).toHaveLength(PARALLEL - 3);
    expect(r.activeRefreshRows).toBe(0);
  });
});
