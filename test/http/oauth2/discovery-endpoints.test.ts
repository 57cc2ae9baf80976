/**
 * A client that follows discovery must find every endpoint it is told about: each URL the
 * discovery document advertises answers (with an error for an empty request, never 404) on the
 * methods it is meant for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';

/** Advertised URLs and the methods a client uses on them. */
const METHODS: Record<string, string[]> = {
  authorization_endpoint: ['GET', 'POST'],
  device_authorization_endpoint: ['POST'],
  registration_endpoint: ['POST'],
  token_endpoint: ['POST'],
  jwks_uri: ['GET'],
  userinfo_endpoint: ['GET', 'POST'],
  revocation_endpoint: ['POST'],
  end_session_endpoint: ['GET', 'POST'],
  credentials_endpoint_draft_00: ['POST'],
  pushed_authorization_request_endpoint: ['POST'],
};

describe('every endpoint in discovery answers', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'oidc.dynamic_client_registration.enabled': true } });
  });
  afterAll(() => t?.close());

  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    it(`${path}: no advertised endpoint is missing`, async () => {
      const doc = (await (await fetch(`${t.publicUrl}${path}`)).json()) as Record<string, unknown>;
      const advertised = Object.entries(doc).filter(
        ([k, v]) => typeof v === 'string' && k !== 'issuer' && /^https?:\/\//.test(v),
      ) as Array<[string, string]>;
      expect(advertised.map(([k]) => k).sort()).toEqual(
        Object.keys(METHODS)
          .filter((k) => k in doc)
          .sort(),
      );
      expect(advertised.length).toBeGreaterThanOrEqual(8);
      for (const [key, url] of advertised) {
        expect(url.startsWith(t.publicUrl), key).toBe(true);
        for (const method of METHODS[key] ?? []) {
          const r = await fetch(url, {
            method,
            redirect: 'manual',
            ...(method === 'POST'
              ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' }
              : {}),
          });
          await r.arrayBuffer();
          expect([key, method, r.status === 404 || r.status === 405]).toEqual([key, method, false]);
        }
      }
    });
  }
});
