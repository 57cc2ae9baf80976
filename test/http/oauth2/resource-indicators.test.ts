/**
 * Resource indicators (RFC 8707): `resource` at the authorization and token endpoints, checked
 * (absolute URI, no fragment, within the client's `audience`), becoming the access token's `aud`,
 * and narrowing a code or refresh exchange to part of the grant; openid-client v6 as the client.
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
import { tokenRequest } from '../../helpers/tokens.ts';

const API = 'https://api.example.com';
const REPORTS = 'https://reports.example.com/v1';
const OTHER = 'https://other.example.com';

let t: TestServer;
let client: CreatedClient;

beforeAll(async () => {
  t = await startTestServer();
  client = await createClient(t, {
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    scope: 'openid offline_access read',
    audience: [API, REPORTS],
  });
});
afterAll(() => t?.close());

const token = (form: Record<string, string | string[]>, c: CreatedClient = client) => tokenRequest(t, c, form);

async function audienceOf(accessToken: string): Promise<unknown> {
  const r = await fetch(`${t.adminUrl}/admin/oauth2/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: accessToken }).toString(),
  });
  const body = (await r.json()) as { active: boolean; aud?: unknown };
  expect(body.active).toBe(true);
  return body.aud;
}

describe('resource indicators (RFC 8707)', () => {
  it('client_credentials: each resource within the client audience becomes the token audience', async () => {
    const r = await token({ grant_type: 'client_credentials', scope: 'read', resource: [API, `${REPORTS}/sales`] });
    expect(r.status).toBe(200);
    expect(await audienceOf(String(r.body.access_token))).toEqual([API, `${REPORTS}/sales`]);
    // A JWT access token says the same in `aud`.
    const jwtClient = await createClient(t, {
      grant_types: ['client_credentials'],
      scope: 'read',
      audience: [API],
      access_token_strategy: 'jwt',
    });
    const j = await token({ grant_type: 'client_credentials', resource: API }, jwtClient);
    expect(decodeJwt(String(j.body.access_token)).aud).toEqual([API]);
  });

  it('refuses a resource that is not an absolute URI, has a fragment, or is not allowed, with invalid_target', async () => {
    for (const resource of ['api', '/relative', `${API}/x#frag`, OTHER, 'https://api.example.com.evil.example']) {
      const r = await token({ grant_type: 'client_credentials', resource });
      expect(r.status, resource).toBe(400);
      expect(r.body.error, resource).toBe('invalid_target');
    }
  });

  it('at the authorization endpoint: refused resources go back to the client as invalid_target', async () => {
    for (const resource of [OTHER, 'not a uri', `${API}#x`]) {
      const r = await new Browser().get(
        authorizeUrl(t, {
          client_id: client.client_id,
          response_type: 'code',
          redirect_uri: CB,
          scope: 'openid',
          state: randomState(),
          resource,
        }),
      );
      expect(r.location.startsWith(CB), resource).toBe(true);
      expect(param(r.location, 'error'), resource).toBe('invalid_target');
    }
  });

  it('a code grant for two resources; the exchange and each refresh narrow the access token (openid-client)', async () => {
    const config = await discoverAs(t, client);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CB,
      scope: 'openid offline_access',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    url.searchParams.append('resource', API);
    url.searchParams.append('resource', REPORTS);
    let requested: unknown;
    const r = await runFlow(t, new Browser(), url.toString(), {
      consent: (q) => {
        requested = q.requested_scope;
        return { grant_scope: q.requested_scope, grant_access_token_audience: [API, REPORTS] };
      },
    });
    expect(requested).toEqual(['openid', 'offline_access']);
    const tokens = await oidc.authorizationCodeGrant(
      config,
      new URL(r.final),
      { pkceCodeVerifier: verifier, expectedState: state },
      { resource: API },
    );
    expect(await audienceOf(tokens.access_token)).toEqual([API]);
    // The refresh token keeps the whole grant: another refresh may ask for the other resource.
    const second = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, { resource: REPORTS });
    expect(await audienceOf(second.access_token)).toEqual([REPORTS]);
    const whole = await oidc.refreshTokenGrant(config, second.refresh_token as string);
    expect(await audienceOf(whole.access_token)).toEqual([API, REPORTS]);
    const outside = await token({
      grant_type: 'refresh_token',
      refresh_token: whole.refresh_token as string,
      resource: OTHER,
    });
    expect(outside.status).toBe(400);
    expect(outside.body.error).toBe('invalid_target');
    // The refused refresh spent nothing: the token still works.
    const still = await token({ grant_type: 'refresh_token', refresh_token: whole.refresh_token as string });
    expect(still.status).toBe(200);
  });

  it('the consent app sees the resources as the requested audience', async () => {
    const step = await new Browser().get(
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
        resource: API,
      }),
    );
    const challenge = param(step.location, 'login_challenge') as string;
    const login = (await (
      await fetch(`${t.adminUrl}/admin/oauth2/auth/requests/login?login_challenge=${challenge}`)
    ).json()) as { requested_access_token_audience: string[] };
    expect(login.requested_access_token_audience).toEqual([API]);
  });
});
