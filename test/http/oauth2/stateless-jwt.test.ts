/**
 * Stateless JWT access tokens (`strategies.jwt.stateless.enabled`): self-contained JWTs with the stateless claim, no
 * access-token row, refresh tokens still stored, and 501 from introspection, revocation and userinfo.
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import type { JsonBody } from '../../helpers/json.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { codeTokens, introspect, refresh, revoke, tokenRequest } from '../../helpers/tokens.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    overrides: { 'strategies.jwt.stateless.enabled': true, 'strategies.jwt.stateless.claim_name': 'stateless' },
  });
});
afterAll(() => t?.close());

const verify = async (token: string) => {
  const jwks = createLocalJWKSet((await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as never);
  return (await jwtVerify(token, jwks)).payload;
};

const rows = async (table: 'oauth2_access_tokens' | 'oauth2_refresh_tokens', clientId: string) =>
  (
    await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where client_id = ${clientId}`.execute(
      t.container.db,
    )
  ).rows[0]?.n;

describe('stateless JWT access tokens', () => {
  it('issues self-contained JWTs carrying the stateless claim and writes no access-token row', async () => {
    const client = await createClient(t); // an opaque-strategy client: stateless wins
    const tok = await codeTokens(t, client, 'openid offline', {
      consent: (q) => ({ grant_scope: q.requested_scope, session: { access_token: { tenant: 't1' } } }),
    });
    const claims = await verify(tok.access_token as string);
    expect(claims).toMatchObject({ stateless: true, sub: 'alice', client_id: client.client_id, ext: { tenant: 't1' } });
    expect(tok.refresh_token).toMatch(/^ory_rt_/);
    expect(await rows('oauth2_access_tokens', client.client_id)).toBe(0);
    expect(await rows('oauth2_refresh_tokens', client.client_id)).toBe(1);

    const next = await refresh(t, client, tok.refresh_token as string);
    expect(next.status).toBe(200);
    expect((await verify(next.body.access_token)).stateless).toBe(true);
    expect(await rows('oauth2_access_tokens', client.client_id)).toBe(0);
  });

  it('issues stateless client_credentials tokens too', async () => {
    const client = await createClient(t, { grant_types: ['client_credentials'], scope: 'read' });
    const r = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    expect((await verify(r.body.access_token)).stateless).toBe(true);
    expect(await rows('oauth2_access_tokens', client.client_id)).toBe(0);
  });

  it('answers 501 Not Implemented, saying why, at introspection, revocation and userinfo', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    const replies = [
      await introspect(t, tok.access_token as string),
      await revoke(t, client, tok.access_token as string),
      await (async () => {
        const res = await fetch(`${t.publicUrl}/userinfo`, {
          headers: { authorization: `Bearer ${tok.access_token}` },
        });
        return { status: res.status, body: (await res.json()) as Record<string, JsonBody> };
      })(),
    ];
    for (const [i, what] of ['introspection', 'revocation', 'userinfo'].entries()) {
      expect(replies[i]?.status).toBe(501);
      expect(replies[i]?.body.error).toBe('not_implemented');
      expect(replies[i]?.body.error_description).toContain(`The ${what} endpoint is not available`);
      expect(replies[i]?.body.error_description).toContain('strategies.jwt.stateless.enabled');
    }
  });
});
