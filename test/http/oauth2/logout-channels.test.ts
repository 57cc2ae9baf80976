/**
 * Front- and back-channel logout: the iframe page, logout tokens delivered by the
 * `oauth2_backchannel_logout` job to a loopback receiver (with a failure and a retry), headless
 * logout by `sid`, the discard-skipped-consents caveat, and the one indexed client lookup.
 */

import type { Runner } from 'graphile-worker';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logoutClientsQuery } from '../../../src/oauth2/store/logout.ts';
import { eventually, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { acceptLogout, backchannelJobs, rememberedLogin, sessionCount, startReceiver } from '../../helpers/logout.ts';
import { adminApi, Browser, createClient } from '../../helpers/oauth2.ts';

const POST_LOGOUT = 'http://127.0.0.1:9999/bye';
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

let t: TestServer;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const failuresLeft = new Map<string, number>();

beforeAll(async () => {
  // The receiver is on loopback: the outbound guard must allow private addresses here.
  t = await startTestServer({ overrides: { 'clients.http.disallow_private_ip_ranges': false } });
  receiver = await startReceiver((req) => {
    const left = failuresLeft.get(req.url ?? '') ?? 0;
    if (left > 0) {
      failuresLeft.set(req.url ?? '', left - 1);
      return 500;
    }
    return 204;
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const logoutUrl = (q: Record<string, string>) => `${t.publicUrl}/oauth2/sessions/logout?${new URLSearchParams(q)}`;

/** Two clients in one login session (the second login is skipped: single sign-on). */
async function twoClientSession(a: Record<string, unknown>, b: Record<string, unknown>, subject = 'alice') {
  const clientA = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT], ...a });
  const clientB = await createClient(t, b);
  const browser = new Browser();
  const first = await rememberedLogin(t, browser, clientA, subject);
  const second = await rememberedLogin(t, browser, clientB, subject);
  expect(second.loginSkipped).toBe(true);
  expect(second.sid).toBe(first.sid);
  return { clientA, clientB, browser, idToken: first.idToken, sid: first.sid };
}

describe('front-channel logout', () => {
  it('answers 200 HTML with one hidden iframe (iss and sid added) per client of the session, then goes on', async () => {
    const bystander = await createClient(t, { frontchannel_logout_uri: 'http://127.0.0.1:9999/not-in-session' });
    const s = await twoClientSession(
      { frontchannel_logout_uri: 'http://127.0.0.1:9999/fc-a?tenant=x&y=1' },
      { frontchannel_logout_uri: 'http://127.0.0.1:9999/fc-b', frontchannel_logout_session_required: true },
    );
    const start = await s.browser.get(
      logoutUrl({ id_token_hint: s.idToken, post_logout_redirect_uri: POST_LOGOUT, state: 'st"<x>&y' }),
    );
    const done = await acceptLogout(t, s.browser, start.location);
    expect(done.status).toBe(200);
    expect(done.res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(done.res.headers.get('cache-control')).toBe('no-store');
    const html = await done.res.text();

    const srcs = [...html.matchAll(/<iframe src="([^"]*)"><\/iframe>/g)].map((m) =>
      (m[1] as string).replaceAll('&amp;', '&'),
    );
    expect(srcs).toHaveLength(2);
    const issuer = t.container.config.urls.self.issuer;
    const urls = srcs.map((u) => new URL(u));
    expect(urls.map((u) => u.pathname).sort()).toEqual(['/fc-a', '/fc-b']);
    for (const u of urls) {
      expect(u.searchParams.get('iss')).toBe(issuer);
      expect(u.searchParams.get('sid')).toBe(s.sid);
    }
    expect(urls.find((u) => u.pathname === '/fc-a')?.searchParams.get('tenant')).toBe('x');
    expect(html).not.toContain(bystander.client_id);
    // Ampersands are escaped inside attributes; the redirect target sits in the meta refresh and the script.
    expect(html).toContain('/fc-a?tenant=x&amp;y=1&amp;iss=');
    const target = `${POST_LOGOUT}?state=${encodeURIComponent('st"<x>&y').replace(/%20/g, '+')}`;
    expect(new URL(target).searchParams.get('state')).toBe('st"<x>&y');
    expect(html).toContain(`<meta http-equiv="refresh" content="7; URL=${target.replaceAll('&', '&amp;')}">`);
    expect(html).toContain(`var redir = ${JSON.stringify(target).replaceAll('&', '\\u0026')};`);
    expect(html).toContain('setTimeout(redirect, 7000)');
    expect(html.split('<script nonce=')).toHaveLength(2); // one script block only
    expect(await sessionCount(t, { sid: s.sid })).toBe(0);
  });

  it('redirects (302) when no client of the session has a front-channel URI', async () => {
    const s = await twoClientSession({}, {});
    const start = await s.browser.get(logoutUrl({ id_token_hint: s.idToken, post_logout_redirect_uri: POST_LOGOUT }));
    const done = await acceptLogout(t, s.browser, start.location);
    expect(done.status).toBe(302);
    expect(done.location).toBe(POST_LOGOUT);
  });
});

describe('back-channel logout', () => {
  let runner: Runner | undefined;
  afterAll(async () => {
    await runner?.stop();
  });

  it('enqueues one job per client with the session deletion; delivers a verifiable logout_token; retries a failing receiver', async () => {
    const s = await twoClientSession(
      { backchannel_logout_uri: receiver.url('/bc-a') },
      { backchannel_logout_uri: receiver.url('/bc-b'), backchannel_logout_session_required: true },
    );
    failuresLeft.set('/bc-b', 1);
    const start = await s.browser.get(logoutUrl({ id_token_hint: s.idToken, post_logout_redirect_uri: POST_LOGOUT }));
    const done = await acceptLogout(t, s.browser, start.location);
    expect(done.location).toBe(POST_LOGOUT);

    // Enqueued by the transaction that deleted the session, before any worker ran.
    const jobs = (await backchannelJobs(t)).filter((j) => j.sid === s.sid);
    expect(jobs.map((j) => j.clientId).sort()).toEqual([s.clientA.client_id, s.clientB.client_id].sort());
    expect(await sessionCount(t, { sid: s.sid })).toBe(0);

    runner = await t.startWorker();
    await eventually(async () => receiver.received.some((r) => r.path === '/bc-a'));
    const jobB = await eventually(async () =>
      (await backchannelJobs(t)).find((j) => j.clientId === s.clientB.client_id && j.attempts === 1 && j.lastError),
    );
    expect(jobB.lastError).toContain('HTTP 500');
    // Run the retry now instead of waiting for the backoff.
    await sql`select graphile_worker.reschedule_jobs(array[${jobB.id}]::bigint[], run_at := now())`.execute(
      t.container.db,
    );
    await eventually(async () => receiver.received.filter((r) => r.path === '/bc-b').length === 2);
    await eventually(async () => (await backchannelJobs(t)).every((j) => j.sid !== s.sid));

    // The key set read once (a remote set would add a 5 s fetch deadline of its own to the test).
    const jwks = createLocalJWKSet(
      (await (await fetch(new URL('/.well-known/jwks.json', t.publicUrl))).json()) as JSONWebKeySet,
    );
    const issuer = t.container.config.urls.self.issuer;
    const tokens = receiver.received.filter((r) => r.path === '/bc-a' || r.path === '/bc-b');
    const jtis = new Set<string>();
    for (const r of tokens) {
      expect(r.contentType).toBe('application/x-www-form-urlencoded');
      const token = r.body.get('logout_token') as string;
      const client = r.path === '/bc-a' ? s.clientA.client_id : s.clientB.client_id;
      const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer, audience: client });
      expect(protectedHeader.kid).toBe((await t.container.oauth2.keys.getSigningKey('hydra.openid.id-token')).kid);
      expect(decodeProtectedHeader(token).alg).toBe('RS256');
      expect(payload.aud).toEqual([client]);
      expect(payload.sid).toBe(s.sid);
      expect(payload.events).toEqual({ [EVENT]: {} });
      expect(typeof payload.jti).toBe('string');
      expect(Math.abs((payload.iat as number) - Date.now() / 1000)).toBeLessThan(60);
      // As Hydra: no sub (it may be pairwise per client) and no exp.
      expect(payload).not.toHaveProperty('sub');
      expect(payload).not.toHaveProperty('exp');
      expect(payload).not.toHaveProperty('nonce');
      jtis.add(payload.jti as string);
    }
    expect(jtis.size).toBe(tokens.length);
  });

  it('headless logout (DELETE ?sid=) notifies every client of the session and deletes it', async () => {
    const s = await twoClientSession(
      { backchannel_logout_uri: receiver.url('/hl-a') },
      { backchannel_logout_uri: receiver.url('/hl-b'), frontchannel_logout_uri: 'http://127.0.0.1:9999/fc' },
      'henry',
    );
    await adminApi(t).revokeOAuth2LoginSessions({ sid: s.sid });
    expect(await sessionCount(t, { sid: s.sid })).toBe(0);
    await eventually(async () => ['/hl-a', '/hl-b'].every((p) => receiver.received.some((r) => r.path === p)));
    for (const p of ['/hl-a', '/hl-b']) {
      const token = receiver.received.find((r) => r.path === p)?.body.get('logout_token') as string;
      const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
      expect(claims.sid).toBe(s.sid);
    }
    // An unknown (or already ended) session: 204 and nothing sent.
    const before = (await backchannelJobs(t)).length;
    const r = await fetch(`${t.adminUrl}/admin/oauth2/auth/sessions/login?sid=${s.sid}`, { method: 'DELETE' });
    expect(r.status).toBe(204);
    expect((await backchannelJobs(t)).length).toBeLessThanOrEqual(before);
  });

  it('skips a client that dropped its back-channel URI before the job ran', async () => {
    const s = await twoClientSession({ backchannel_logout_uri: receiver.url('/gone') }, {}, 'ivy');
    await runner?.stop();
    runner = undefined;
    await adminApi(t).revokeOAuth2LoginSessions({ sid: s.sid });
    expect((await backchannelJobs(t)).filter((j) => j.sid === s.sid)).toHaveLength(1);
    const patch = await fetch(`${t.adminUrl}/admin/clients/${s.clientA.client_id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ op: 'replace', path: '/backchannel_logout_uri', value: '' }]),
    });
    expect(patch.status).toBe(200);
    runner = await t.startWorker();
    await eventually(async () => (await backchannelJobs(t)).every((j) => j.sid !== s.sid));
    expect(receiver.received.some((r) => r.path === '/gone')).toBe(false);
  });
});

describe('feature_flags.discard_skipped_consents', () => {
  it('sends no notification for clients whose consent was skipped (no flow row), without an error', async () => {
    const d = await startTestServer({
      overrides: { 'feature_flags.discard_skipped_consents': true, 'clients.http.disallow_private_ip_ranges': false },
    });
    try {
      const skipped = await createClient(d, {
        skip_consent: true,
        backchannel_logout_uri: receiver.url('/discard-skipped'),
        post_logout_redirect_uris: [POST_LOGOUT],
      });
      const normal = await createClient(d, { backchannel_logout_uri: receiver.url('/discard-normal') });
      const browser = new Browser();
      const first = await rememberedLogin(d, browser, skipped, 'judy');
      await rememberedLogin(d, browser, normal, 'judy');
      const start = await browser.get(
        `${d.publicUrl}/oauth2/sessions/logout?${new URLSearchParams({ id_token_hint: first.idToken, post_logout_redirect_uri: POST_LOGOUT })}`,
      );
      const done = await acceptLogout(d, browser, start.location);
      expect(done.location).toBe(POST_LOGOUT);
      expect(await sessionCount(d, { sid: first.sid })).toBe(0);
      const jobs = await backchannelJobs(d);
      expect(jobs.map((j) => j.clientId)).toEqual([normal.client_id]);
    } finally {
      await d.close();
    }
  });
});

describe('the clients of a session are found with one indexed query', () => {
  it('plans the flow side on oauth2_flows_logout_clients_idx and the client side on its primary key', async () => {
    const db = t.container.db;
    await sql`insert into oauth2_clients (nid, id, backchannel_logout_uri)
      select '00000000-0000-4000-8000-000000000000', 'plan-client-' || g, case when g % 2 = 0 then 'http://127.0.0.1:9/bc' else '' end
      from generate_series(1, 5000) g`.execute(db);
    await sql`insert into oauth2_flows (nid, consent_request_id, login_challenge_id, client_id, subject, login_session_id,
        request_url, requested_at, handled_at, session_data)
      select '00000000-0000-4000-8000-000000000000', 'plan-consent-' || g, 'plan-login-' || g, 'plan-client-' || (g % 5000 + 1),
        'plan-subject-' || (g % 1000), 'plan-sid-' || (g % 4000), 'http://x/', now(), now(), ''
      from generate_series(1, 20000) g`.execute(db);
    await sql`analyze oauth2_flows`.execute(db);
    await sql`analyze oauth2_clients`.execute(db);

    const q = logoutClientsQuery(db, ['plan-sid-7']).compile();
    const { rows } = await t.container.pool.query<{ 'QUERY PLAN': string }>(`explain ${q.sql}`, [...q.parameters]);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('oauth2_flows_logout_clients_idx');
    expect(plan).toContain('oauth2_clients_pkey');
    expect(plan).not.toMatch(/Seq Scan/);
    // The query answers what the plan promises: the clients with a logout URI, once each.
    const found = await logoutClientsQuery(db, ['plan-sid-7', 'plan-sid-8']).execute();
    const expected = await sql<{
      sid: string;
      id: string;
    }>`select distinct f.login_session_id as sid, c.id from oauth2_flows f
      join oauth2_clients c on c.id = f.client_id where f.login_session_id in ('plan-sid-7', 'plan-sid-8')
      and c.backchannel_logout_uri <> '' order by 1, 2`.execute(db);
    expect(found.map((r) => [r.sid, r.clientId])).toEqual(expected.rows.map((r) => [r.sid, r.id]));
    expect(found.length).toBeGreaterThan(0);
  });
});
