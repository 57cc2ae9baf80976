/**
 * The `claims` request parameter (OpenID Connect Core §5.5): validated, shown to the login and
 * consent apps, and its `sub` value and essential `acr` values held against the login; the claims
 * the consent app grants reach the ID token and userinfo (openid-client v6 as the relying party).
 */
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  authorizeUrl,
  Browser,
  CB,
  type CreatedClient,
  createClient,
  param,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';

let t: TestServer;
let client: CreatedClient;

beforeAll(async () => {
  t = await startTestServer();
  client = await createClient(t);
});
afterAll(() => t?.close());

const url = (claims: unknown, over: Record<string, string> = {}) =>
  authorizeUrl(t, {
    client_id: client.client_id,
    response_type: 'code',
    redirect_uri: CB,
    scope: 'openid',
    state: randomState(),
    claims: typeof claims === 'string' ? claims : JSON.stringify(claims),
    ...over,
  });

describe('the claims request parameter', () => {
  it('is advertised, reaches the login and consent apps, and the granted claims reach the ID token and userinfo', async () => {
    const config = await discoverAs(t, client);
    expect(config.serverMetadata().claims_parameter_supported).toBe(true);
    const claims = {
      id_token: { email: { essential: true }, acr: { values: ['urn:acr:mfa'] } },
      userinfo: { email_verified: null, locale: { value: 'de' } },
    };
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const start = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CB,
      scope: 'openid',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      claims: JSON.stringify(claims),
    });
    const seen: Record<string, unknown> = {};
    const r = await runFlow(t, new Browser(), start.toString(), {
      login: (q) => {
        seen.login = q.challenge;
        return { subject: 'alice', acr: 'urn:acr:mfa' };
      },
      consent: (q) => {
        seen.consent = q.challenge;
        return {
          grant_scope: q.requested_scope,
          session: { id_token: { email: 'alice@example.com', email_verified: true, locale: 'de' } },
        };
      },
    });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(r.final), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()).toMatchObject({ sub: 'alice', email: 'alice@example.com', acr: 'urn:acr:mfa' });
    const info = await oidc.fetchUserInfo(config, tokens.access_token, 'alice');
    expect(info).toMatchObject({ email: 'alice@example.com', email_verified: true, locale: 'de' });
  });

  it('shows the request to the login app and to the consent app', async () => {
    const claims = { userinfo: { given_name: { essential: true } }, id_token: { auth_time: null } };
    const b = new Browser();
    const step = await b.get(url(claims));
    const login = param(step.location, 'login_challenge') as string;
    const read = async (kind: string, challenge: string) =>
      (await (
        await fetch(`${t.adminUrl}/admin/oauth2/auth/requests/${kind}?${kind}_challenge=${challenge}`)
      ).json()) as { oidc_context: Record<string, unknown> };
    expect((await read('login', login)).oidc_context.claims).toEqual(claims);
    const accepted = (await (
      await fetch(`${t.adminUrl}/admin/oauth2/auth/requests/login/accept?login_challenge=${login}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ subject: 'alice' }),
      })
    ).json()) as { redirect_to: string };
    const consent = param((await b.get(accepted.redirect_to)).location, 'consent_challenge') as string;
    expect((await read('consent', consent)).oidc_context.claims).toEqual(claims);
  });

  it('refuses what is not a claims request, at the client, before any screen', async () => {
    for (const bad of [
      'not json',
      '[1,2]',
      JSON.stringify({ userinfo: 'email' }),
      JSON.stringify({ id_token: { email: { essential: 'yes' } } }),
      JSON.stringify({ id_token: { email: { values: 'a' } } }),
      JSON.stringify({ id_token: { email: { unknown: 1 } } }),
      JSON.stringify({ userinfo: { x: { value: 'y'.repeat(9000) } } }),
    ]) {
      // POSTed: the largest one does not fit a URL.
      const form = new URL(url(bad)).searchParams;
      const r = await new Browser().get(`${t.publicUrl}/oauth2/auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
      expect(r.location.startsWith(CB), bad.slice(0, 80)).toBe(true);
      expect(param(r.location, 'error'), bad.slice(0, 80)).toBe('invalid_request');
      expect(param(r.location, 'error_description'), bad.slice(0, 80)).toMatch(/claims/);
    }
  });

  it('a sub value asked for must be the user who logs in (Core §3.1.2.2)', async () => {
    const other = await runFlow(t, new Browser(), url({ id_token: { sub: { value: 'bob' } } }), {
      login: () => ({ subject: 'alice' }),
    });
    expect(param(other.final, 'error')).toBe('login_required');
    const same = await runFlow(t, new Browser(), url({ id_token: { sub: { value: 'alice' } } }), {
      login: () => ({ subject: 'alice' }),
    });
    expect(param(same.final, 'code')).toMatch(/^ory_ac_/);
  });

  it('an essential acr with values the login does not meet fails the authentication (Core §5.5.1.1)', async () => {
    const essential = { id_token: { acr: { essential: true, values: ['urn:acr:mfa', 'urn:acr:hw'] } } };
    const weak = await runFlow(t, new Browser(), url(essential), {
      login: () => ({ subject: 'alice', acr: 'urn:acr:pwd' }),
    });
    expect(param(weak.final, 'error')).toBe('access_denied');
    const strong = await runFlow(t, new Browser(), url(essential), {
      login: () => ({ subject: 'alice', acr: 'urn:acr:hw' }),
    });
    expect(param(strong.final, 'code')).toMatch(/^ory_ac_/);
    // Not essential: a voluntary request, met or not.
    const voluntary = await runFlow(t, new Browser(), url({ id_token: { acr: { values: ['urn:acr:hw'] } } }), {
      login: () => ({ subject: 'alice', acr: 'urn:acr:pwd' }),
    });
    expect(param(voluntary.final, 'code')).toMatch(/^ory_ac_/);
    const idt = await exchangeAndDecode(param(strong.final, 'code') as string);
    expect(idt.acr).toBe('urn:acr:hw');
  });
});

async function exchangeAndDecode(code: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${t.publicUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CB }).toString(),
  });
  expect(r.status).toBe(200);
  return decodeJwt(((await r.json()) as { id_token: string }).id_token) as Record<string, unknown>;
}
