/**
 * Login and consent verifiers are usable once, even after the session or consent they created was
 * revoked (the used-verifier record outlives both), and the per-flow CSRF cookies are cleared when
 * their verifier is used.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';
import { Browser, codeFlowUrl, createClient, param, runFlow } from '../../helpers/oauth2.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

const csrfCookies = (b: Browser) => [...b.cookies.keys()].filter((k) => /csrf/.test(k));

describe('verifiers are single-use', () => {
  it('a login verifier replayed after the login session was revoked does not bring the session back', async () => {
    const client = await createClient(t);
    const b = new Browser();
    const first = await runFlow(t, b, codeFlowUrl(t, client, 'openid'), {
      login: () => ({ subject: 'replay-login', remember: true }),
    });
    expect(param(first.final, 'code')).toBeTruthy();
    const del = await call(t.adminUrl, 'DELETE', '/admin/oauth2/auth/sessions/login?subject=replay-login');
    expect(del.status).toBe(204);

    const replay = await b.get(first.loginVerifierUrl as string);
    expect(replay.status).toBe(303);
    expect(param(replay.location, 'error')).toBe('access_denied');
    expect(param(replay.location, 'error_description')).toContain('The login verifier has already been used.');
    expect(param(replay.location, 'consent_challenge')).toBeNull();

    const next = await runFlow(t, b, codeFlowUrl(t, client, 'openid'), {
      login: (q) => ({ subject: q.skip ? q.subject : 'someone-else' }),
    });
    expect(next.loginSeen?.skip).toBe(false);
  });

  it('a consent verifier replayed after the consent was revoked issues nothing and stores nothing', async () => {
    const client = await createClient(t);
    const b = new Browser();
    const first = await runFlow(t, b, codeFlowUrl(t, client, 'openid offline'), {
      login: () => ({ subject: 'replay-consent', remember: true }),
      consent: (q) => ({ grant_scope: q.requested_scope, remember: true }),
    });
    expect(param(first.final, 'code')).toBeTruthy();
    const revoke = await call(
      t.adminUrl,
      'DELETE',
      '/admin/oauth2/auth/sessions/consent?subject=replay-consent&all=true',
    );
    expect(revoke.status).toBe(204);
    const sessions = () => call(t.adminUrl, 'GET', '/admin/oauth2/auth/sessions/consent?subject=replay-consent');
    expect((await sessions()).body).toEqual([]);

    const replay = await b.get(first.consentVerifierUrl as string);
    expect(replay.status).toBe(303);
    expect(param(replay.location, 'code')).toBeNull();
    expect(param(replay.location, 'error')).toBe('access_denied');
    expect(param(replay.location, 'error_description')).toContain('The consent verifier has already been used.');
    expect((await sessions()).body).toEqual([]);
  });

  it('clears the login and consent CSRF cookies once their verifiers are used', async () => {
    const client = await createClient(t);
    const b = new Browser();
    let loginCsrf: string[] = [];
    await runFlow(t, b, codeFlowUrl(t, client, 'openid'), {
      login: () => {
        loginCsrf = csrfCookies(b);
        return { subject: 'csrf-user' };
      },
    });
    expect(loginCsrf.length).toBe(1);
    expect(csrfCookies(b)).toEqual([]);
  });

  it('keeps the used-verifier record until the verifier expires; the janitor removes it after', async () => {
    const { rows } = await sql<{
      id: string;
      expires_at: Date;
    }>`select id, expires_at from oauth2_used_verifiers`.execute(t.container.db);
    expect(rows.length).toBeGreaterThan(0);
    const ttl = t.container.config.ttl.login_consent_request;
    for (const r of rows) {
      expect(r.id).toMatch(/^(login|consent):/);
      expect(r.expires_at.getTime()).toBeLessThanOrEqual(Date.now() + ttl + 60_000);
      expect(r.expires_at.getTime()).toBeGreaterThan(Date.now());
    }
    await sql`update oauth2_used_verifiers set expires_at = now() - interval '1 minute'`.execute(t.container.db);
    const r = await t.container.oauth2.janitor.run({ targets: ['requests'], limit: 1000, batchSize: 100 });
    expect(r.deleted.oauth2_used_verifiers).toBe(rows.length);
    const left = await sql<{ n: number }>`select count(*)::int as n from oauth2_used_verifiers`.execute(t.container.db);
    expect(left.rows[0]?.n).toBe(0);
  });
});
