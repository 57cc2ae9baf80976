/**
 * The refresh_token grant : strict rotation, reuse
 * detection revoking the whole grant, graceful rotation with and without a reuse count, a row
 * whose used-times count was never stored, and the preconditions in Hydra's order.
 */
import { sql } from 'kysely';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { ConfigError } from '../../../src/core/config/load.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase } from '../../helpers/db.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';
import { codeTokens, introspect, isActive, refresh } from '../../helpers/tokens.ts';

const signatureOf = (rt: string) => rt.split('.')[1] as string;

async function usedTimes(t: TestServer, rt: string) {
  const { rows } = await sql<{ used_times: number | null; active: boolean }>`
    select used_times, active from oauth2_refresh_tokens where signature = ${signatureOf(rt)}`.execute(t.container.db);
  return rows[0];
}

describe('strict rotation (no grace period)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('rotates through openid-client: new access, refresh and ID tokens; the old pair stops working', async () => {
    const client = await createClient(t);
    const first = await codeTokens(t, client, 'openid offline_access');
    const config = await discoverAs(t, client);
    const next = await oidc.refreshTokenGrant(config, first.refresh_token as string, { scope: 'openid' });
    expect(next.access_token).toMatch(/^ory_at_/);
    expect(next.refresh_token).toMatch(/^ory_rt_/);
    expect(next.refresh_token).not.toBe(first.refresh_token);
    expect(next.scope).toBe('openid offline_access'); // the scope parameter is ignored
    expect(next.claims()).toMatchObject({ sub: 'alice', aud: [client.client_id] });
    expect(await isActive(t, first.access_token as string)).toBe(false);
    expect(await isActive(t, first.refresh_token as string)).toBe(false);
    expect(await isActive(t, next.access_token)).toBe(true);
    const again = await oidc.refreshTokenGrant(config, next.refresh_token as string);
    expect(again.access_token).toMatch(/^ory_at_/);
  });

  it('treats reuse of a rotated token as theft: invalid_grant, and the new tokens are revoked too', async () => {
    const client = await createClient(t);
    const first = await codeTokens(t, client);
    const second = await refresh(t, client, first.refresh_token as string);
    expect(second.status).toBe(200);
    const reuse = await refresh(t, client, first.refresh_token as string);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    expect(reuse.body.error_description).toContain('The refresh token was already used.');
    const newer = await refresh(t, client, second.body.refresh_token);
    expect(newer.status).toBe(400);
    expect(newer.body.error).toBe('invalid_grant');
    expect(await isActive(t, second.body.access_token)).toBe(false);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from oauth2_refresh_tokens
      where client_id = ${client.client_id}`.execute(t.container.db);
    expect(rows[0]?.n).toBe(0);
  });

  it('checks the preconditions in Hydra’s order', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    const rt = tok.refresh_token as string;

    const noGrant = await createClient(t, { grant_types: ['authorization_code'] });
    expect((await refresh(t, noGrant, rt)).body.error).toBe('unauthorized_client');
    const garbage = await refresh(t, client, 'ory_rt_nope.nope');
    expect([garbage.status, garbage.body.error]).toEqual([400, 'invalid_grant']);
    expect(garbage.body.error_description).toContain('malformed or not valid');

    const other = await createClient(t);
    const foreign = await refresh(t, other, rt);
    expect([foreign.status, foreign.body.error]).toEqual([400, 'invalid_grant']);
    expect(foreign.body.error_description).toContain('does not match the ID during the initial token issuance');

    // The grant lost its offline scope (a row edited by hand): scope_not_granted, 403.
    const offline = await codeTokens(t, client);
    await sql`update oauth2_refresh_tokens set granted_scope = '["openid"]'
      where signature = ${signatureOf(offline.refresh_token as string)}`.execute(t.container.db);
    const noOffline = await refresh(t, client, offline.refresh_token as string);
    expect([noOffline.status, noOffline.body.error]).toEqual([403, 'scope_not_granted']);

    // The client no longer has a scope it was granted.
    await fetch(`${t.adminUrl}/admin/clients/${client.client_id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ op: 'replace', path: '/scope', value: 'offline' }]),
    });
    const narrowed = await refresh(t, client, rt);
    expect([narrowed.status, narrowed.body.error]).toEqual([400, 'invalid_scope']);
  });

  it('refuses an expired refresh token', async () => {
    const client = await createClient(t);
    await fetch(`${t.adminUrl}/admin/clients/${client.client_id}/lifespans`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ authorization_code_grant_refresh_token_lifespan: '1s' }),
    });
    const tok = await codeTokens(t, client);
    await sql`update oauth2_refresh_tokens set expires_at = now() - interval '1 second'
      where signature = ${signatureOf(tok.refresh_token as string)}`.execute(t.container.db);
    const r = await refresh(t, client, tok.refresh_token as string);
    expect([r.status, r.body.error]).toEqual([400, 'invalid_grant']);
    expect(r.body.error_description).toContain('The refresh token expired.');
  });
});

describe('graceful rotation without a reuse count (period 1m)', () => {
  const clock = manualClock();
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ clock, overrides: { 'oauth2.grant.refresh_token.rotation_grace_period': '1m' } });
  });
  afterAll(() => t?.close());

  it('accepts a used token again within the period, revoking only its paired access token', async () => {
    const client = await createClient(t);
    const first = await codeTokens(t, client);
    const a = await refresh(t, client, first.refresh_token as string);
    const b = await refresh(t, client, first.refresh_token as string);
    const c = await refresh(t, client, first.refresh_token as string);
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
    expect(await isActive(t, first.access_token as string)).toBe(false);
    // Tokens issued by earlier uses stay valid: graceful rotation only drops the paired access token.
    expect(await isActive(t, a.body.access_token)).toBe(true);
    expect(await isActive(t, a.body.refresh_token)).toBe(true);
    expect((await usedTimes(t, first.refresh_token as string))?.used_times).toBe(3);

    clock.advance(61_000);
    const late = await refresh(t, client, first.refresh_token as string);
    expect([late.status, late.body.error]).toEqual([400, 'invalid_grant']);
    // Reuse after the period is theft: the whole grant is gone.
    expect(await isActive(t, c.body.refresh_token)).toBe(false);
    expect((await refresh(t, client, c.body.refresh_token)).status).toBe(400);
  });
});

describe('graceful rotation with a reuse count (period 1h, count 2)', () => {
  const clock = manualClock();
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({
      clock,
      overrides: {
        'oauth2.grant.refresh_token.rotation_grace_period': '1h',
        'oauth2.grant.refresh_token.rotation_grace_reuse_count': 2,
      },
    });
  });
  afterAll(() => t?.close());

  it('allows as many uses as the count, then revokes the grant', async () => {
    const client = await createClient(t);
    const first = await codeTokens(t, client);
    const rt = first.refresh_token as string;
    expect((await refresh(t, client, rt)).status).toBe(200);
    const second = await refresh(t, client, rt);
    expect(second.status).toBe(200);
    expect((await usedTimes(t, rt))?.used_times).toBe(2);
    const third = await refresh(t, client, rt);
    expect([third.status, third.body.error]).toEqual([400, 'invalid_grant']);
    expect(await isActive(t, second.body.access_token)).toBe(false);
  });

  it('judges a token whose used-times count was never stored (NULL) as used 0 times', async () => {
    const client = await createClient(t);
    const first = await codeTokens(t, client);
    const rt = first.refresh_token as string;
    // A used token as an older release (or Hydra) left it: inactive, first used now, count not stored.
    await sql`update oauth2_refresh_tokens set active = false, first_used_at = ${clock.now()}, used_times = null
      where signature = ${signatureOf(rt)}`.execute(t.container.db);
    expect(await usedTimes(t, rt)).toEqual({ used_times: null, active: false });
    expect((await introspect(t, rt)).body.active).toBe(true);
    const a = await refresh(t, client, rt);
    expect(a.status).toBe(200);
    expect((await usedTimes(t, rt))?.used_times).toBe(1);
    expect((await refresh(t, client, rt)).status).toBe(200);
    expect((await refresh(t, client, rt)).body.error).toBe('invalid_grant');
  });
});

describe('grace period limits', () => {
  it('refuses more than 5 minutes without a reuse count, and more than 180 days with one', async () => {
    const database = await createTestDatabase();
    await expect(
      startTestServer({ database, overrides: { 'oauth2.grant.refresh_token.rotation_grace_period': '6m' } }),
    ).rejects.toThrow(/rotation_grace_period: must be at most 5m unless .*rotation_grace_reuse_count is set/);
    await expect(
      startTestServer({
        database,
        overrides: {
          'oauth2.grant.refresh_token.rotation_grace_period': '4321h',
          'oauth2.grant.refresh_token.rotation_grace_reuse_count': 1,
        },
      }),
    ).rejects.toThrow(ConfigError);
    const ok = await startTestServer({
      database,
      overrides: {
        'oauth2.grant.refresh_token.rotation_grace_period': '4320h',
        'oauth2.grant.refresh_token.rotation_grace_reuse_count': 1,
      },
    });
    expect(ok.container.config.oauth2.grant.refresh_token.rotation_grace_period).toBe(180 * 86_400_000);
    await ok.close();
    await database.drop();
  });
});
