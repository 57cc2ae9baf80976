import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  adminApi,
  Browser,
  type CreatedClient,
  codeFlowUrl,
  createClient,
  exchangeCode,
  param,
  runFlow,
} from '../../helpers/oauth2.ts';

const rememberAll = {
  login: (r: { skip: boolean; subject: string }) => ({ subject: r.skip ? r.subject : 'carol', remember: true }),
  consent: (q: { requested_scope: string[] }) => ({
    grant_scope: q.requested_scope,
    remember: true,
    session: { id_token: { email: 'carol@example.com' }, access_token: { tenant: 't1' } },
  }),
};

async function tokensFor(t: TestServer, client: CreatedClient, b = new Browser()) {
  const url = codeFlowUrl(t, client, 'openid offline');
  const r = await runFlow(t, b, url, rememberAll);
  const tok = await exchangeCode(t, client, param(r.final, 'code') as string);
  return { ...r, tok: tok.body as Record<string, string>, browser: b };
}

const userinfoStatus = async (t: TestServer, at: string) =>
  (await fetch(`${t.publicUrl}/userinfo`, { headers: { authorization: `Bearer ${at}` } })).status;

describe('consent sessions', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('lists a subject’s consents with Hydra’s fields and a Link header', async () => {
    const client = await createClient(t);
    const { tok } = await tokensFor(t, client);
    expect(await userinfoStatus(t, tok.access_token as string)).toBe(200);
    const r = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=carol`);
    expect(r.status).toBe(200);
    expect(r.headers.get('link')).toMatch(/rel="first"/);
    const list = (await r.json()) as { handled_at: string }[];
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      grant_scope: ['openid', 'offline'],
      grant_access_token_audience: [],
      remember: true,
      remember_for: 0,
      session: { id_token: { email: 'carol@example.com' }, access_token: { tenant: 't1' } },
      consent_request: { subject: 'carol', challenge: '', client: { client_id: client.client_id } },
    });
    expect(list[0]?.handled_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const none = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=nobody`);
    expect(await none.json()).toEqual([]);
    const missing = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent`);
    expect(missing.status).toBe(400);
  });

  it('keeps consent and token session claims encrypted at rest', async () => {
    const { rows } = await sql<{ data: string }>`select session_data as data from oauth2_flows
      union all select session_data from oauth2_access_tokens`.execute(t.container.db);
    expect(rows.length).toBeGreaterThan(1);
    for (const r of rows) {
      expect(r.data).not.toContain('carol@example.com');
      expect(r.data.startsWith('{')).toBe(false);
    }
  });

  it('revokes by subject and client, and the tokens issued under the consent stop working', async () => {
    const client = await createClient(t);
    const { tok } = await tokensFor(t, client);
    await adminApi(t).revokeOAuth2ConsentSessions({ subject: 'carol', client: client.client_id });
    expect(await userinfoStatus(t, tok.access_token as string)).toBe(401);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from oauth2_refresh_tokens
      where client_id = ${client.client_id}`.execute(t.container.db);
    expect(rows[0]?.n).toBe(0);
  });

  it('revokes everything of a subject with all=true, and one consent by its id', async () => {
    const a = await createClient(t);
    const b = await createClient(t);
    const one = await tokensFor(t, a);
    const two = await tokensFor(t, b);
    await adminApi(t).revokeOAuth2ConsentSessions({ consentRequestId: two.consentSeen?.consent_request_id });
    expect(await userinfoStatus(t, two.tok.access_token as string)).toBe(401);
    expect(await userinfoStatus(t, one.tok.access_token as string)).toBe(200);
    const r = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=carol&all=true`, {
      method: 'DELETE',
    });
    expect(r.status).toBe(204);
    expect(await userinfoStatus(t, one.tok.access_token as string)).toBe(401);
    const left = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=carol`);
    expect(await left.json()).toEqual([]);
  });

  it('pages consent sessions with page_size and the next link', async () => {
    for (let i = 0; i < 3; i++) {
      const c = await createClient(t);
      const r = await runFlow(t, new Browser(), codeFlowUrl(t, c, 'openid'), { login: () => ({ subject: 'erin' }) });
      expect(param(r.final, 'code')).toBeTruthy();
    }
    const first = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=erin&page_size=2`);
    expect((await first.json()) as unknown[]).toHaveLength(2);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
    expect(next).toMatch(/^\/admin\/oauth2\/auth\/sessions\/consent\?/);
    const second = await fetch(`${t.adminUrl}${next}`);
    expect((await second.json()) as unknown[]).toHaveLength(1);
    expect(second.headers.get('link')).not.toContain('rel="next"');
  });

  it('refuses other combinations of revoke parameters with 400', async () => {
    for (const q of ['subject=carol', 'client=x', 'subject=carol&client=x&all=true', '']) {
      const r = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?${q}`, { method: 'DELETE' });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error_description: string }).error_description).toContain(
        'Invalid combination of query parameters.',
      );
    }
  });

  it('forgets login sessions of a subject, so the next request needs a fresh login', async () => {
    const client = await createClient(t);
    const { browser } = await tokensFor(t, client);
    const r = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/login?subject=carol`, { method: 'DELETE' });
    expect(r.status).toBe(204);
    const again = await tokensFor(t, client, browser);
    expect(again.loginSeen?.skip).toBe(false);
  });
});

describe('feature_flags.discard_skipped_consents', () => {
  const countFlows = async (t: TestServer, subject: string) => {
    const { rows } = await sql<{ flows: number; used: number }>`select
      (select count(*)::int from oauth2_flows where subject = ${subject}) as flows,
      (select count(*)::int from oauth2_used_consents) as used`.execute(t.container.db);
    return rows[0] as { flows: number; used: number };
  };

  for (const flag of [false, true]) {
    it(`${flag ? 'keeps only the id of' : 'stores'} a skipped consent, and still refuses its reuse (flag ${flag})`, async () => {
      const t = await startTestServer({ overrides: { 'feature_flags.discard_skipped_consents': flag } });
      try {
        const client = await createClient(t);
        const b = new Browser();
        await tokensFor(t, client, b);
        expect(await countFlows(t, 'carol')).toEqual({ flows: 1, used: flag ? 1 : 0 });
        const skipped = await tokensFor(t, client, b);
        expect(skipped.consentSeen?.skip).toBe(true);
        expect(skipped.tok.access_token).toMatch(/^ory_at_/);
        expect(await countFlows(t, 'carol')).toEqual(flag ? { flows: 1, used: 2 } : { flows: 2, used: 0 });
        const replay = await b.get(skipped.consentVerifierUrl as string);
        expect(param(replay.location, 'error')).toBe('access_denied');
        // Only handled, non-skipped consents are listed either way.
        const list = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/consent?subject=carol`);
        expect((await list.json()) as unknown[]).toHaveLength(1);
        // Revoking by subject and client also ends the tokens of the skipped (maybe discarded) consent.
        await adminApi(t).revokeOAuth2ConsentSessions({ subject: 'carol', client: client.client_id });
        expect(await userinfoStatus(t, skipped.tok.access_token as string)).toBe(401);
      } finally {
        await t.close();
      }
    });
  }
});
