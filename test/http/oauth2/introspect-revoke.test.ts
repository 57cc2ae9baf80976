/**
 * Introspection (RFC 7662), revocation (RFC 7009), deletion of a client's access tokens
 * (`DELETE /admin/oauth2/tokens`) and the revocation of a deleted client's tokens.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { codeTokens, introspect, isActive, revoke } from '../../helpers/tokens.ts';

const clock = manualClock();
const SALT = 'pairwise-salt-0123';
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    clock,
    overrides: {
      'oidc.subject_identifiers.supported_types': ['public', 'pairwise'],
      'oidc.subject_identifiers.pairwise.salt': SALT,
    },
  });
});
afterAll(() => t?.close());

const withClaims = {
  consent: (q: { requested_scope: string[] }) => ({
    grant_scope: q.requested_scope,
    grant_access_token_audience: ['https://api.example.com'],
    session: { access_token: { tenant: 't1' } },
  }),
};

async function countRows(clientId: string) {
  const { rows } = await sql<{ a: number; r: number }>`select
      (select count(*)::int from oauth2_access_tokens where client_id = ${clientId}) as a,
      (select count(*)::int from oauth2_refresh_tokens where client_id = ${clientId}) as r`.execute(t.container.db);
  return rows[0];
}

describe('introspection', () => {
  it('describes active access and refresh tokens with Hydra’s fields', async () => {
    const client = await createClient(t, { audience: ['https://api.example.com'] });
    const tok = await codeTokens(t, client, 'openid offline', withClaims);
    const at = await introspect(t, tok.access_token as string);
    expect(at.status).toBe(200);
    expect(at.res.headers.get('content-type')).toBe('application/json;charset=UTF-8');
    expect(at.res.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(at.body)).toEqual([
      'active',
      'scope',
      'client_id',
      'sub',
      'exp',
      'iat',
      'nbf',
      'aud',
      'iss',
      'token_type',
      'token_use',
      'ext',
    ]);
    const now = Math.floor(clock.now().getTime() / 1000);
    expect(at.body).toMatchObject({
      active: true,
      scope: 'openid offline',
      client_id: client.client_id,
      sub: 'alice',
      aud: ['https://api.example.com'],
      iss: t.container.config.urls.self.issuer,
      token_type: 'Bearer',
      token_use: 'access_token',
      ext: { tenant: 't1' },
    });
    expect(at.body.iat).toBe(at.body.nbf);
    expect(at.body.exp - now).toBeGreaterThan(3590);
    const rt = await introspect(t, tok.refresh_token as string, { token_type_hint: 'refresh_token' });
    expect(rt.body).toMatchObject({ active: true, token_use: 'refresh_token', sub: 'alice' });
    expect(rt.body.exp - now).toBeGreaterThan(719 * 3600);
  });

  it('reports the real subject and the pairwise one as obfuscated_subject', async () => {
    const client = await createClient(t, { subject_type: 'pairwise' });
    const tok = await codeTokens(t, client);
    const pairwise = createHash('sha256').update('127.0.0.1:9999').update('alice').update(SALT).digest('hex');
    expect((await introspect(t, tok.access_token as string)).body).toMatchObject({
      sub: 'alice',
      obfuscated_subject: pairwise,
    });
  });

  it('is inactive for unknown, expired and scope-mismatched tokens; an empty body is 400', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client, 'openid offline');
    for (const token of ['ory_at_unknown.token', 'garbage', '']) {
      expect((await introspect(t, token)).body).toEqual({ active: false });
    }
    expect((await introspect(t, tok.access_token as string, { scope: 'openid' })).body.active).toBe(true);
    expect((await introspect(t, tok.access_token as string, { scope: 'openid profile' })).body).toEqual({
      active: false,
    });
    const empty = await fetch(`${t.adminUrl}/admin/oauth2/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error: 'invalid_request' });
    clock.advance(3601_000);
    try {
      expect((await introspect(t, tok.access_token as string)).body).toEqual({ active: false });
      expect((await introspect(t, tok.refresh_token as string)).body.active).toBe(true);
    } finally {
      clock.set(new Date());
    }
  });
});

describe('revocation', () => {
  it('revoking the access token ends the whole grant (access and refresh tokens)', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    expect(await isActive(t, tok.access_token as string)).toBe(true);
    const r = await revoke(t, client, tok.access_token as string, { token_type_hint: 'access_token' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({});
    expect(r.res.headers.get('cache-control')).toBe('no-store');
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    expect(await isActive(t, tok.refresh_token as string)).toBe(false);
  });

  it('revoking the refresh token ends the whole grant too', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    expect((await revoke(t, client, tok.refresh_token as string)).status).toBe(200);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    expect(await isActive(t, tok.refresh_token as string)).toBe(false);
    expect(await countRows(client.client_id)).toEqual({ a: 0, r: 0 });
  });

  it('answers 200 for unknown tokens and silently ignores another client’s token', async () => {
    const client = await createClient(t);
    const other = await createClient(t);
    const tok = await codeTokens(t, client);
    expect((await revoke(t, client, 'ory_at_nope.nope')).status).toBe(200);
    const foreign = await revoke(t, other, tok.access_token as string);
    expect(foreign.status).toBe(200);
    expect(await isActive(t, tok.access_token as string)).toBe(true);
  });

  it('answers invalid_client (401) and invalid_request (400) with the bare description', async () => {
    const client = await createClient(t);
    const bad = await revoke(t, { ...client, client_secret: 'wrong-secret' }, 'x');
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({
      error: 'invalid_client',
      error_description:
        'Client authentication failed (e.g., unknown client, no client authentication included, or unsupported authentication method).',
    });
    const empty = await fetch(`${t.publicUrl}/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: string }).error).toBe('invalid_request');
    const get = await fetch(`${t.publicUrl}/oauth2/revoke`);
    expect(get.status).toBe(400);
  });

  it('lets public clients revoke with their client_id', async () => {
    const pub = await createClient(t, { token_endpoint_auth_method: 'none' });
    const tok = await codeTokens(t, { client_id: pub.client_id }, 'openid offline');
    expect((await revoke(t, { client_id: pub.client_id }, tok.refresh_token as string)).status).toBe(200);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
  });
});

describe('DELETE /admin/oauth2/tokens and client deletion', () => {
  it('deletes the access tokens of a client and keeps its refresh tokens', async () => {
    const client = await createClient(t);
    const other = await createClient(t);
    const tok = await codeTokens(t, client);
    const kept = await codeTokens(t, other);
    const r = await fetch(`${t.adminUrl}/admin/oauth2/tokens?client_id=${client.client_id}`, { method: 'DELETE' });
    expect(r.status).toBe(204);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    expect(await isActive(t, tok.refresh_token as string)).toBe(true);
    expect(await isActive(t, kept.access_token as string)).toBe(true);
    const missing = await fetch(`${t.adminUrl}/admin/oauth2/tokens`, { method: 'DELETE' });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('revokes every token of a deleted client', async () => {
    const client = await createClient(t);
    const tok = await codeTokens(t, client);
    expect(await countRows(client.client_id)).toEqual({ a: 1, r: 1 });
    expect((await fetch(`${t.adminUrl}/admin/clients/${client.client_id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await countRows(client.client_id)).toEqual({ a: 0, r: 0 });
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    expect(await isActive(t, tok.refresh_token as string)).toBe(false);
  });
});
