/**
 * Trusted JWT-bearer issuers (after Hydra's cypress admin/grant_jwtbearer) and the
 * RFC 7523 grant (cypress oauth2/grant_jwtbearer), on a server whose issuer is a custom
 * domain different from its public URL (the token URL derived from the issuer is a valid audience).
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import type { JsonBody } from '../../helpers/json.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';
import { introspect, tokenRequest } from '../../helpers/tokens.ts';

const GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const PUBLIC_TOKEN_URL = 'https://internal.example.net/oauth2/token';
const ISSUER_TOKEN_URL = 'https://auth.example.com/oauth2/token';
const IDP = 'https://idp.example.org';
const BASE = '/admin/trust/grants/jwt-bearer/issuers';

async function keyPair(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } as JWK };
}
type Keys = Awaited<ReturnType<typeof keyPair>>;

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

async function trust(t: TestServer, body: Record<string, unknown>) {
  const r = await fetch(`${t.adminUrl}${BASE}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, JsonBody>, headers: r.headers };
}

interface AssertionOpts {
  iss?: string;
  sub?: string;
  aud?: string | string[];
  exp?: number | null;
  iat?: number | null;
  nbf?: number;
  jti?: string | null;
  kid?: string | null;
  key?: Keys;
}

function assertion(keys: Keys, o: AssertionOpts = {}) {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: o.iss ?? IDP,
    sub: o.sub ?? 'svc-alice',
    aud: o.aud ?? PUBLIC_TOKEN_URL,
  };
  if (o.exp !== null) claims.exp = o.exp ?? now + 300;
  if (o.iat !== null) claims.iat = o.iat ?? now;
  if (o.nbf !== undefined) claims.nbf = o.nbf;
  if (o.jti !== null) claims.jti = o.jti ?? randomUUID();
  const header: Record<string, string> = { alg: 'RS256' };
  if (o.kid !== null) header.kid = o.kid ?? keys.kid;
  return new SignJWT(claims).setProtectedHeader(header as never).sign((o.key ?? keys).privateKey);
}

describe('JWT bearer grant with trusted issuers', () => {
  let t: TestServer;
  let client: CreatedClient;
  let keys: Keys;
  beforeAll(async () => {
    t = await startTestServer({
      overrides: {
        'urls.self.issuer': 'https://auth.example.com/',
        'urls.self.public': 'https://internal.example.net/',
      },
    });
    client = await createClient(t, {
      grant_types: [GRANT],
      response_types: ['token'],
      scope: 'read write',
      audience: ['https://api.example.com'],
    });
    keys = await keyPair('idp-key-1');
    const r = await trust(t, {
      issuer: IDP,
      subject: 'svc-alice',
      scope: ['read', 'write', 'admin'],
      jwk: keys.jwk,
      expires_at: inAnHour(),
    });
    expect(r.status).toBe(201);
  });
  afterAll(() => t?.close());

  const grant = async (a: string | undefined, extra: Record<string, string> = {}, c: CreatedClient | null = client) =>
    tokenRequest(t, c ?? undefined, { grant_type: GRANT, ...(a === undefined ? {} : { assertion: a }), ...extra });

  it('accepts an assertion for the internal public token URL and for the custom-domain issuer’s token URL', async () => {
    for (const aud of [PUBLIC_TOKEN_URL, ISSUER_TOKEN_URL, ['https://other.example', ISSUER_TOKEN_URL]]) {
      const r = await grant(await assertion(keys, { aud }), { scope: 'read' });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
      expect(r.body).toMatchObject({ token_type: 'bearer', scope: 'read', expires_in: 3600 });
    }
  });

  it('refuses any other audience', async () => {
    for (const aud of [
      'https://auth.example.com/oauth2/token/',
      'https://internal.example.net/',
      'https://evil/oauth2/token',
    ]) {
      const r = await grant(await assertion(keys, { aud }));
      expect([r.status, r.body.error]).toEqual([400, 'invalid_grant']);
      expect(r.body.error_description).toContain(`'${PUBLIC_TOKEN_URL}' or '${ISSUER_TOKEN_URL}'`);
    }
  });

  it('gives the token the assertion subject, its audience and the allowed requested audience', async () => {
    const r = await grant(await assertion(keys), {
      scope: 'read write',
      audience: 'https://api.example.com/v1 https://not-allowed.example',
    });
    const info = await introspect(t, r.body.access_token);
    expect(info.body).toMatchObject({
      active: true,
      sub: 'svc-alice',
      client_id: client.client_id,
      scope: 'read write',
      aud: [PUBLIC_TOKEN_URL, 'https://api.example.com/v1'],
      iss: 'https://auth.example.com/',
    });
  });

  it('answers 400 for every failing check of the cypress suite', async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = await keyPair(keys.kid);
    const cases: Array<[string, () => Promise<Awaited<ReturnType<typeof grant>>>, string]> = [
      ['no client credentials', async () => grant(await assertion(keys), {}, null), 'invalid_request'],
      ['no jti', async () => grant(await assertion(keys, { jti: null })), 'invalid_grant'],
      ['no iat', async () => grant(await assertion(keys, { iat: null })), 'invalid_grant'],
      ['bad signature', async () => grant(await assertion(keys, { key: stranger })), 'invalid_grant'],
      ['wrong sub', async () => grant(await assertion(keys, { sub: 'svc-mallory' })), 'invalid_grant'],
      ['wrong iss', async () => grant(await assertion(keys, { iss: 'https://evil.example' })), 'invalid_grant'],
      ['wrong aud', async () => grant(await assertion(keys, { aud: 'https://evil/oauth2/token' })), 'invalid_grant'],
      ['expired', async () => grant(await assertion(keys, { exp: now - 10, iat: now - 100 })), 'invalid_grant'],
      ['nbf in the future', async () => grant(await assertion(keys, { nbf: now + 60 })), 'invalid_grant'],
      ['no exp', async () => grant(await assertion(keys, { exp: null })), 'invalid_grant'],
      ['too long (max_ttl 720h)', async () => grant(await assertion(keys, { exp: now + 721 * 3600 })), 'invalid_grant'],
      ['no assertion', async () => grant(undefined), 'invalid_request'],
      ['not a JWT', async () => grant('not-a-jwt'), 'invalid_grant'],
      ['unknown kid', async () => grant(await assertion(keys, { kid: 'nope' })), 'invalid_grant'],
      ['scope not trusted', async () => grant(await assertion(keys), { scope: 'read delete' }), 'invalid_scope'],
    ];
    for (const [name, run, error] of cases) {
      const r = await run();
      expect([name, r.status, r.body.error]).toEqual([name, 400, error]);
    }
  });

  it('refuses a replayed jti with jti_known', async () => {
    const jti = randomUUID();
    expect((await grant(await assertion(keys, { jti }))).status).toBe(200);
    const again = await grant(await assertion(keys, { jti }));
    expect([again.status, again.body.error]).toEqual([400, 'jti_known']);
  });

  it('accepts a past nbf, an assertion without kid, and allow_any_subject relationships', async () => {
    expect((await grant(await assertion(keys, { nbf: Math.floor(Date.now() / 1000) - 30 }))).status).toBe(200);
    expect((await grant(await assertion(keys, { kid: null }))).status).toBe(200);
    const anyKeys = await keyPair('idp-any');
    const r = await trust(t, {
      issuer: 'https://any.example',
      allow_any_subject: true,
      scope: ['read'],
      jwk: anyKeys.jwk,
      expires_at: inAnHour(),
    });
    expect([r.status, r.body.subject, r.body.allow_any_subject]).toEqual([201, '', true]);
    for (const sub of ['one', 'two']) {
      const ok = await grant(await assertion(anyKeys, { iss: 'https://any.example', sub }), { scope: 'read' });
      expect(ok.status).toBe(200);
    }
  });

  it('grants only the requested scopes the client itself allows', async () => {
    const r = await grant(await assertion(keys), { scope: 'read admin' });
    expect([r.status, r.body.scope]).toEqual([200, 'read']);
  });

  it('refuses clients without the grant type and relationships that expired', async () => {
    const other = await createClient(t, { grant_types: ['client_credentials'], scope: 'read' });
    const r = await grant(await assertion(keys), {}, other);
    expect([r.status, r.body.error]).toEqual([400, 'unauthorized_client']);
    const old = await keyPair('idp-old');
    const made = await trust(t, {
      issuer: 'https://old.example',
      subject: 's',
      scope: [],
      jwk: old.jwk,
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    expect(made.status).toBe(201);
    await t.container.db
      .updateTable('oauth2_trusted_jwt_bearer_issuers')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', made.body.id)
      .execute();
    const late = await grant(await assertion(old, { iss: 'https://old.example', sub: 's' }));
    expect([late.status, late.body.error]).toEqual([400, 'invalid_grant']);
  });
});

describe('trusted issuer admin API', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('creates, reads, lists (with Link pagination) and deletes issuers with Hydra’s fields', async () => {
    const k = await keyPair('k-admin-1');
    const expires = '2031-02-03T04:05:06.789Z';
    const r = await trust(t, {
      issuer: 'https://a.example',
      subject: 'bob',
      scope: ['openid', 'offline'],
      jwk: k.jwk,
      expires_at: expires,
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/trust/grants/jwt-bearer/issuers/${r.body.id}`);
    expect(Object.keys(r.body)).toEqual([
      'id',
      'issuer',
      'subject',
      'allow_any_subject',
      'scope',
      'public_key',
      'created_at',
      'expires_at',
    ]);
    expect(r.body).toMatchObject({
      issuer: 'https://a.example',
      subject: 'bob',
      allow_any_subject: false,
      scope: ['openid', 'offline'],
      public_key: { set: 'https://a.example', kid: 'k-admin-1' },
      expires_at: '2031-02-03T04:05:07Z',
    });
    expect(Math.abs(Date.parse(r.body.created_at) - Date.now())).toBeLessThan(5000);
    expect(r.body.id).toMatch(/^[0-9a-f-]{36}$/);

    const got = await (await fetch(`${t.adminUrl}${BASE}/${r.body.id}`)).json();
    expect(got).toEqual(r.body);
    const key = await fetch(`${t.adminUrl}/admin/keys/${encodeURIComponent('https://a.example')}/k-admin-1`);
    expect(key.status).toBe(200);

    const k2 = await keyPair('k-admin-2');
    const second = await trust(t, {
      issuer: 'https://b.example',
      allow_any_subject: true,
      jwk: k2.jwk,
      expires_at: expires,
    });
    expect(second.body.scope).toEqual([]);
    const page1 = await fetch(`${t.adminUrl}${BASE}?page_size=1`);
    const link = page1.headers.get('link') ?? '';
    expect(link).toMatch(/rel="first"/);
    const next = /<([^>]+)>; rel="next"/.exec(link)?.[1] as string;
    expect(next).toContain('page_size=1');
    const page2 = (await (await fetch(`${t.adminUrl}${next}`)).json()) as { id: string }[];
    const ids = [((await page1.json()) as { id: string }[])[0]?.id, page2[0]?.id];
    expect(ids.sort()).toEqual([r.body.id, second.body.id].sort());
    const badToken = await fetch(`${t.adminUrl}${BASE}?page_token=garbage`);
    expect(badToken.status).toBe(400);
    expect(((await badToken.json()) as { error_description: string }).error_description).toContain(
      'invalid pagination token',
    );
    const filtered = (await (
      await fetch(`${t.adminUrl}${BASE}?issuer=${encodeURIComponent('https://b.example')}`)
    ).json()) as { id: string }[];
    expect(filtered.map((x) => x.id)).toEqual([second.body.id]);

    const del = await fetch(`${t.adminUrl}${BASE}/${r.body.id}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    expect((await fetch(`${t.adminUrl}${BASE}/${r.body.id}`)).status).toBe(404);
    expect((await fetch(`${t.adminUrl}/admin/keys/${encodeURIComponent('https://a.example')}/k-admin-1`)).status).toBe(
      404,
    );
  });

  it('answers 409 for a duplicate (issuer, subject, kid) and 400 for invalid bodies', async () => {
    const k = await keyPair('k-dup');
    const body = { issuer: 'https://dup.example', subject: 's', scope: ['a'], jwk: k.jwk, expires_at: inAnHour() };
    expect((await trust(t, body)).status).toBe(201);
    expect((await trust(t, body)).status).toBe(409);
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ ...body, issuer: '' }, "Field 'issuer' is required."],
      [{ ...body, subject: '' }, "One of 'subject' or 'allow_any_subject' field must be set."],
      [
        { ...body, allow_any_subject: true },
        "Both 'subject' and 'allow_any_subject' fields cannot be set at the same time.",
      ],
      [{ ...body, expires_at: undefined }, "Field 'expires_at' is required."],
      [{ ...body, expires_at: '0001-01-01T00:00:00Z' }, "Field 'expires_at' is required."],
      [{ ...body, jwk: { ...k.jwk, kid: undefined } }, "Field 'jwk' must contain JWK with kid header."],
    ];
    for (const [b, hint] of bad) {
      const r = await trust(t, b);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        error: 'missing_required_parameter',
        error_description: `One of the required parameters is missing. Check your request parameters. ${hint.replaceAll('"', "'")}`,
      });
    }
    const wrongType = await trust(t, { ...body, scope: 'a b' });
    expect([wrongType.status, wrongType.body.error]).toEqual([400, 'error']);
    const badKey = await trust(t, { ...body, jwk: { kty: 'EC', crv: 'P-256', kid: 'x', x: 'AAAA', y: 'AAAA' } });
    expect(badKey.status).toBe(400);
    const notJson = await fetch(`${t.adminUrl}${BASE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{nope',
    });
    expect(notJson.status).toBe(400);
  });

  it('answers 400 for a non-UUID id and 404 for an unknown one', async () => {
    const g = await fetch(`${t.adminUrl}${BASE}/not-a-uuid`);
    expect(g.status).toBe(400);
    expect(((await g.json()) as { error_description: string }).error_description).toMatch(
      /^Unable to parse parameter id/,
    );
    expect((await fetch(`${t.adminUrl}${BASE}/not-a-uuid`, { method: 'DELETE' })).status).toBe(400);
    expect((await fetch(`${t.adminUrl}${BASE}/${randomUUID()}`)).status).toBe(404);
    expect((await fetch(`${t.adminUrl}${BASE}/${randomUUID()}`, { method: 'DELETE' })).status).toBe(404);
  });
});

describe('JWT bearer options: iat_optional, jti_optional, max_ttl, discovery token_url', () => {
  let t: TestServer;
  let client: CreatedClient;
  let keys: Keys;
  beforeAll(async () => {
    t = await startTestServer({
      overrides: {
        'oauth2.grant.jwt.iat_optional': true,
        'oauth2.grant.jwt.jti_optional': true,
        'oauth2.grant.jwt.max_ttl': '10m',
        'webfinger.oidc_discovery.token_url': 'https://gateway.example.com/token',
      },
    });
    client = await createClient(t, { grant_types: [GRANT], scope: 'read' });
    await fetch(`${t.adminUrl}/admin/clients/${client.client_id}/lifespans`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jwt_bearer_grant_access_token_lifespan: '5m' }),
    });
    keys = await keyPair('opt-key');
    await trust(t, { issuer: IDP, subject: 'svc', scope: ['read'], jwk: keys.jwk, expires_at: inAnHour() });
  });
  afterAll(() => t?.close());

  it('accepts assertions without iat and jti, for the configured token_url, with the client lifespan', async () => {
    const a = await assertion(keys, { sub: 'svc', aud: 'https://gateway.example.com/token', iat: null, jti: null });
    const r = await tokenRequest(t, client, { grant_type: GRANT, assertion: a, scope: 'read' });
    expect([r.status, r.body.expires_in]).toEqual([200, 300]);
    // The discovery override replaces the public token URL; the issuer-derived one still counts.
    const viaIssuer = await assertion(keys, { sub: 'svc', aud: `${t.publicUrl}/oauth2/token` });
    expect((await tokenRequest(t, client, { grant_type: GRANT, assertion: viaIssuer })).status).toBe(200);
    const tooLong = await assertion(keys, {
      sub: 'svc',
      aud: 'https://gateway.example.com/token',
      exp: Math.floor(Date.now() / 1000) + 11 * 60,
    });
    expect((await tokenRequest(t, client, { grant_type: GRANT, assertion: tooLong })).body.error).toBe('invalid_grant');
  });
});
