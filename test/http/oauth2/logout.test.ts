/**
 * RP-initiated and OP-initiated logout through the public endpoint and the logout admin API, with
 * openid-client as the relying party (`buildEndSessionUrl`) after a real login.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { acceptLogout, rememberedLogin, sessionCount } from '../../helpers/logout.ts';
import { adminApi, Browser, codeFlowUrl, createClient, param, randomState, runFlow } from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';

let t: TestServer;
const POST_LOGOUT = 'http://127.0.0.1:9999/logged-out';

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const logoutUrl = (q: Record<string, string> = {}) => {
  const u = new URL('/oauth2/sessions/logout', t.publicUrl);
  for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
  return u.toString();
};

const errorOf = (location: string) => {
  expect(location.startsWith(t.container.config.urls.error)).toBe(true);
  return { error: param(location, 'error'), description: param(location, 'error_description') ?? '' };
};

describe('RP-initiated logout', () => {
  it('logs out through openid-client’s end-session URL: logout UI, session gone, back to the RP with state', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { idToken, sid } = await rememberedLogin(t, browser, client);
    expect(await sessionCount(t, { sid })).toBe(1);

    const config = await discoverAs(t, client);
    const state = oidc.randomState();
    const end = oidc.buildEndSessionUrl(config, {
      id_token_hint: idToken,
      post_logout_redirect_uri: POST_LOGOUT,
      state,
    });
    expect(end.toString().startsWith(`${t.publicUrl}/oauth2/sessions/logout?`)).toBe(true);

    const start = await browser.get(end.toString());
    expect(start.status).toBe(302);
    expect(start.location.startsWith(t.container.config.urls.logout)).toBe(true);
    const challenge = param(start.location, 'logout_challenge') as string;

    const { data: request } = await adminApi(t).getOAuth2LogoutRequest({ logoutChallenge: challenge });
    expect(request).toMatchObject({
      challenge,
      subject: 'alice',
      sid,
      rp_initiated: true,
      client: { client_id: client.client_id },
    });
    expect(request.request_url).toBe(end.pathname + end.search);
    expect(request.client).not.toHaveProperty('client_secret');
    const requested = Date.parse(request.requested_at as string);
    expect(Math.abs(requested - Date.now())).toBeLessThan(5_000);
    expect(Date.parse(request.expires_at as string) - requested).toBe(30 * 60 * 1000);

    const done = await acceptLogout(t, browser, start.location);
    expect(done.redirectTo.startsWith(`${t.publicUrl}/oauth2/sessions/logout?logout_verifier=`)).toBe(true);
    expect(done.status).toBe(302);
    expect(done.location).toBe(`${POST_LOGOUT}?state=${state}`);
    expect(await sessionCount(t, { sid })).toBe(0);
    expect(browser.cookies.has(t.container.oauth2.flows.cookies.sessionName)).toBe(false);

    // The next authorization needs a fresh login.
    const again = await runFlow(t, browser, codeFlowUrl(t, client, 'openid'));
    expect(again.loginSeen?.skip).toBe(false);
  });

  it('goes to urls.post_logout_redirect when the RP gives no post_logout_redirect_uri (state is then not used)', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { idToken } = await rememberedLogin(t, browser, client);
    const start = await browser.get(logoutUrl({ id_token_hint: idToken, state: randomState() }));
    const done = await acceptLogout(t, browser, start.location);
    expect(done.location).toBe(t.container.config.urls.post_logout_redirect);
    const page = await fetch(done.location);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Your log out request however succeeded.');
  });

  it('accepts an expired id_token_hint and works by POST form too', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { sid } = await rememberedLogin(t, browser, client);
    const key = await t.container.oauth2.keys.getSigningKey('hydra.openid.id-token');
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ sid })
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer(t.container.config.urls.self.issuer)
      .setSubject('alice')
      .setAudience(client.client_id)
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(key.key);
    const start = await browser.get(logoutUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ id_token_hint: expired, post_logout_redirect_uri: POST_LOGOUT }).toString(),
    });
    expect(start.status).toBe(302);
    expect(param(start.location, 'logout_challenge')).toBeTruthy();
    const done = await acceptLogout(t, browser, start.location);
    expect(done.location).toBe(POST_LOGOUT);
    expect(await sessionCount(t, { sid })).toBe(0);
  });

  it('redirects straight to the RP when the hinted session is already gone', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { idToken, sid } = await rememberedLogin(t, browser, client);
    await adminApi(t).revokeOAuth2LoginSessions({ sid });
    const r = await browser.get(
      logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: POST_LOGOUT, state: 'abcdefgh' }),
    );
    expect(r.status).toBe(302);
    expect(r.location).toBe(`${POST_LOGOUT}?state=abcdefgh`);
  });

  it('refuses bad requests with a redirect to urls.error (invalid_request)', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const other = await createClient(t);
    const browser = new Browser();
    const { idToken, sid } = await rememberedLogin(t, browser, client);
    const key = await t.container.oauth2.keys.getSigningKey('hydra.openid.id-token');
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT({
        iss: t.container.config.urls.self.issuer,
        sub: 'alice',
        aud: client.client_id,
        sid,
        iat: Math.floor(Date.now() / 1000),
        ...claims,
      })
        .setProtectedHeader({ alg: key.alg, kid: key.kid })
        .sign(key.key);
    const cases: Array<[Record<string, string>, string]> = [
      [{ state: 'abcdefgh' }, 'state is set but id_token_hint is missing'],
      [{ post_logout_redirect_uri: POST_LOGOUT }, 'post_logout_redirect_uri is set but id_token_hint is missing'],
      [{ id_token_hint: 'not-a-jwt' }, 'id_token_hint'],
      [{ id_token_hint: idToken, post_logout_redirect_uri: 'http://127.0.0.1:9999/elsewhere' }, 'is not a whitelisted'],
      [{ id_token_hint: idToken, post_logout_redirect_uri: `${POST_LOGOUT}/` }, 'is not a whitelisted'],
      [{ id_token_hint: await sign({ iss: 'https://other.example/' }) }, 'does not match with issuer'],
      [{ id_token_hint: await sign({ iat: Math.floor(Date.now() / 1000) + 3600 }) }, 'iat claim'],
      [{ id_token_hint: await sign({ sid: undefined }) }, 'missing sid claim'],
      [{ id_token_hint: await sign({ sub: undefined }) }, 'missing sub claim'],
      [{ id_token_hint: await sign({ aud: ['unknown-client'] }) }, 'none of the listed audiences'],
      // The hint's client decides which redirects are allowed, not another client's list.
      [
        { id_token_hint: await sign({ aud: other.client_id }), post_logout_redirect_uri: POST_LOGOUT },
        'is not a whitelisted',
      ],
    ];
    for (const [q, text] of cases) {
      const r = await browser.get(logoutUrl(q));
      expect(r.status, text).toBe(302);
      const e = errorOf(r.location);
      expect(e.error, text).toBe('invalid_request');
      expect(e.description, text).toContain(text);
    }
    expect(await sessionCount(t, { sid })).toBe(1);
  });
});

describe('OP-initiated logout (no id_token_hint)', () => {
  it('uses the session cookie: challenge without client, accept, fallback post-logout page', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const { sid } = await rememberedLogin(t, browser, client, 'bob');
    const start = await browser.get(logoutUrl());
    expect(start.location.startsWith(t.container.config.urls.logout)).toBe(true);
    const { data } = await adminApi(t).getOAuth2LogoutRequest({
      logoutChallenge: param(start.location, 'logout_challenge') as string,
    });
    expect(data).toMatchObject({
      subject: 'bob',
      sid,
      rp_initiated: false,
      client: null,
      request_url: '/oauth2/sessions/logout',
    });
    const done = await acceptLogout(t, browser, start.location);
    expect(done.location).toBe(t.container.config.urls.post_logout_redirect);
    expect(await sessionCount(t, { sid })).toBe(0);
  });

  it('without a session goes straight to urls.post_logout_redirect', async () => {
    const r = await new Browser().get(logoutUrl());
    expect(r.status).toBe(302);
    expect(r.location).toBe(t.container.config.urls.post_logout_redirect);
  });

  it('leaves a session alone when the browser holds another one by the time the verifier comes back', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    const first = await rememberedLogin(t, browser, client, 'carol');
    const start = await browser.get(logoutUrl());
    const { data } = await adminApi(t).acceptOAuth2LogoutRequest({
      logoutChallenge: param(start.location, 'logout_challenge') as string,
    });
    // Another browser (no cookie) uses the verifier: nothing happens, the session stays.
    const elsewhere = await new Browser().get(data.redirect_to);
    expect(elsewhere.location).toBe(t.container.config.urls.post_logout_redirect);
    expect(await sessionCount(t, { sid: first.sid })).toBe(1);
  });
});

describe('handled logout requests have no stored state', () => {
  it('answers GET 200 before accept, after accept, after completion and after reject (never 410)', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    await rememberedLogin(t, browser, client, 'dave');
    const start = await browser.get(logoutUrl());
    const challenge = param(start.location, 'logout_challenge') as string;
    const get = () =>
      fetch(`${t.adminUrl}/admin/oauth2/auth/requests/logout?logout_challenge=${encodeURIComponent(challenge)}`);
    const before = await (await get()).json();
    const reject = await fetch(
      `${t.adminUrl}/admin/oauth2/auth/requests/logout/reject?logout_challenge=${encodeURIComponent(challenge)}`,
      { method: 'PUT' },
    );
    expect(reject.status).toBe(204);
    expect(await reject.text()).toBe('');
    expect((await get()).status).toBe(200);
    const done = await acceptLogout(t, browser, start.location);
    expect(done.status).toBe(302);
    const after = await get();
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual(before);
    // `challenge=` works as the parameter name too.
    const alias = await fetch(
      `${t.adminUrl}/admin/oauth2/auth/requests/logout?challenge=${encodeURIComponent(challenge)}`,
    );
    expect(alias.status).toBe(200);
  });

  it('writes no row for a logout request: only the session deletion changes the database', async () => {
    const client = await createClient(t);
    const browser = new Browser();
    await rememberedLogin(t, browser, client, 'erin');
    // Counting rows of every gatehouse table before and after start + accept shows no change.
    const snapshot = async () => {
      const { rows } = await t.container.pool.query<{ t: string }>(
        `select table_name as t from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`,
      );
      const out: Record<string, number> = {};
      for (const r of rows)
        out[r.t] = Number((await t.container.pool.query(`select count(*) from ${r.t}`)).rows[0].count);
      return out;
    };
    const before = await snapshot();
    const start = await browser.get(logoutUrl());
    await adminApi(t).getOAuth2LogoutRequest({ logoutChallenge: param(start.location, 'logout_challenge') as string });
    await adminApi(t).acceptOAuth2LogoutRequest({
      logoutChallenge: param(start.location, 'logout_challenge') as string,
    });
    expect(await snapshot()).toEqual(before);
  });

  it('answers 400 without a challenge', async () => {
    const r = await fetch(`${t.adminUrl}/admin/oauth2/auth/requests/logout`);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('a reused verifier only redirects: the session ended once', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { idToken } = await rememberedLogin(t, browser, client);
    const start = await browser.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: POST_LOGOUT }));
    const done = await acceptLogout(t, browser, start.location);
    expect(done.location).toBe(POST_LOGOUT);
    // A new session in the same browser is not ended by replaying the old verifier.
    const next = await rememberedLogin(t, browser, client);
    const replay = await browser.get(done.redirectTo);
    expect(replay.location).toBe(POST_LOGOUT);
    expect(await sessionCount(t, { sid: next.sid })).toBe(1);
  });
});

describe('logout request expired', () => {
  it('refuses undecryptable challenges and verifiers (old format, other secret, tampered, expired) and a retry completes', async () => {
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { idToken, sid } = await rememberedLogin(t, browser, client);
    const { keyRing } = await import('../../../src/core/crypto/keys.ts');
    const { createLogoutCodec } = await import('../../../src/oauth2/logout/challenge.ts');
    const state = {
      nid: '00000000-0000-4000-8000-000000000000',
      subject: 'alice',
      sid,
      requestUrl: '/oauth2/sessions/logout',
      rpInitiated: true,
      clientId: client.client_id,
      requestedAt: Math.floor(Date.now() / 1000) - 3600,
      expiresAt: Math.floor(Date.now() / 1000) - 1800,
      postLogoutRedirectUri: POST_LOGOUT,
    };
    const foreign = createLogoutCodec(keyRing(['another-secret-0123456789abcdef'], 'flow'), () => new Date());
    const own = t.container.oauth2.flows.logoutCodec;
    const live = { ...state, expiresAt: Math.floor(Date.now() / 1000) + 600 };
    const goodChallenge = await own.seal('logout_challenge', live);
    const bad = [
      randomUUID(), // a challenge of the release that kept logout requests in the database
      'garbage',
      await foreign.seal('logout_challenge', live), // sealed before a secret change
      await own.seal('logout_challenge', state), // expired
      `${goodChallenge.slice(0, -3)}${goodChallenge.endsWith('AAA') ? 'BBB' : 'AAA'}`, // tampered
      await own.seal('logout_verifier', live), // a verifier is not a challenge
    ];
    for (const c of bad) {
      const r = await fetch(
        `${t.adminUrl}/admin/oauth2/auth/requests/logout?logout_challenge=${encodeURIComponent(c)}`,
      );
      expect(r.status, c).toBe(401);
      const body = (await r.json()) as { error: string; error_description: string };
      expect(body.error).toBe('request_unauthorized');
      expect(body.error_description).toContain('logout request expired');
      for (const op of ['accept', 'reject']) {
        const w = await fetch(
          `${t.adminUrl}/admin/oauth2/auth/requests/logout/${op}?logout_challenge=${encodeURIComponent(c)}`,
          { method: 'PUT' },
        );
        expect(w.status).toBe(401);
      }
    }
    const badVerifiers = [
      randomUUID(),
      'garbage',
      await foreign.seal('logout_verifier', live),
      await own.seal('logout_verifier', state),
      goodChallenge, // a challenge is not a verifier
    ];
    for (const v of badVerifiers) {
      const r = await browser.get(logoutUrl({ logout_verifier: v }));
      expect(r.status).toBe(302);
      const e = errorOf(r.location);
      expect(e.error).toBe('request_unauthorized');
      expect(e.description).toContain('logout request expired');
    }
    expect(await sessionCount(t, { sid })).toBe(1);

    // The retry: starting the logout again works end to end.
    const start = await browser.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: POST_LOGOUT }));
    const done = await acceptLogout(t, browser, start.location);
    expect(done.location).toBe(POST_LOGOUT);
    expect(await sessionCount(t, { sid })).toBe(0);
  });
});

describe('gatehouse debug challenge', () => {
  it('decodes logout challenges and verifiers into the logout request', async () => {
    const { runCli } = await import('../../helpers/cli.ts');
    const { TEST_SECRET } = await import('../../helpers/apps.ts');
    const client = await createClient(t, { post_logout_redirect_uris: [POST_LOGOUT] });
    const browser = new Browser();
    const { idToken, sid } = await rememberedLogin(t, browser, client);
    const start = await browser.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: POST_LOGOUT }));
    const challenge = param(start.location, 'logout_challenge') as string;
    const { data } = await adminApi(t).acceptOAuth2LogoutRequest({ logoutChallenge: challenge });
    const verifier = param(data.redirect_to, 'logout_verifier') as string;
    const env = { DSN: t.database.url, SECRETS_SYSTEM: TEST_SECRET };
    const c = await runCli(['debug', 'challenge', challenge], env);
    expect(c.code).toBe(0);
    const decoded = JSON.parse(c.stdout);
    expect(decoded).toMatchObject({
      kind: 'logout_challenge',
      expired: false,
      flow: {
        subject: 'alice',
        sid,
        rpInitiated: true,
        clientId: client.client_id,
        postLogoutRedirectUri: POST_LOGOUT,
      },
    });
    expect(decoded.flow.requestedAtIso).toMatch(/^\d{4}-\d\d-\d\dT/);
    const v = await runCli(['debug', 'challenge', verifier], env);
    expect(JSON.parse(v.stdout)).toMatchObject({
      kind: 'logout_verifier',
      flow: { sid, clientId: '', requestUrl: '' },
    });
    const foreign = await runCli(['debug', 'challenge', challenge], {
      ...env,
      SECRETS_SYSTEM: 'another-secret-0123456789abcdef',
    });
    expect(foreign.code).toBe(1);
    expect(foreign.stderr.trim().split('\n')).toHaveLength(1);
  });
});
