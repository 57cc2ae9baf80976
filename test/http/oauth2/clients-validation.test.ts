import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';

const METADATA_DESC =
  "The value of one of the Client Metadata fields is invalid and the server has rejected this request. Note that an Authorization Server MAY choose to substitute a valid value for any requested parameter of a Client's Metadata.";
const URI_FIELDS = ['policy_uri', 'tos_uri', 'client_uri', 'logo_uri'] as const;
const BAD_URIS = ['javascript:alert(1)', 'ftp://files.example.com/policy', 'not-a-URL'];

describe('admin API: client validation (Hydra’s rules and error bodies)', () => {
  let s: TestServer;
  let existing: string;
  beforeAll(async () => {
    s = await startTestServer();
    existing = (await call(s.adminUrl, 'POST', '/admin/clients', { client_id: 'target' })).body.client_id;
  });
  afterAll(async () => s?.close());

  const create = (body: unknown) => call(s.adminUrl, 'POST', '/admin/clients', body);
  const put = (body: unknown) => call(s.adminUrl, 'PUT', `/admin/clients/${existing}`, body);
  const patch = (ops: unknown) => call(s.adminUrl, 'PATCH', `/admin/clients/${existing}`, ops);

  for (const field of URI_FIELDS) {
    for (const bad of BAD_URIS) {
      it(`refuses ${field}=${bad} on create, PUT and PATCH with 400 invalid_client_metadata`, async () => {
        const before = (await call(s.adminUrl, 'GET', `/admin/clients/${existing}`)).body;
        const results = {
          create: await create({ [field]: bad }),
          put: await put({ [field]: bad }),
          patch: await patch([{ op: 'replace', path: `/${field}`, value: bad }]),
        };
        const hint = bad.startsWith('ftp:')
          ? `${bad} must use https:// or http:// as HTTP scheme for field ${field}.`
          : bad.startsWith('javascript:')
            ? `${bad} must use https:// or http:// as HTTP scheme for field ${field}.`
            : `Field ${field} must be a valid URI.`;
        for (const [op, r] of Object.entries(results)) {
          expect(r.status, op).toBe(400);
          expect(r.headers.get('content-type'), op).toMatch(/application\/json/);
          expect(r.body, op).toEqual({
            error: 'invalid_client_metadata',
            error_description: `${METADATA_DESC} ${hint}`,
          });
        }
        expect((await call(s.adminUrl, 'GET', `/admin/clients/${existing}`)).body).toEqual(before);
      });
    }

    it(`accepts http and https for ${field} on create, PUT and PATCH`, async () => {
      const c = await create({ [field]: 'https://example.com/a?b=c' });
      expect(c.status).toBe(201);
      expect(c.body[field]).toBe('https://example.com/a?b=c');
      const p = await put({ [field]: 'http://example.com:8080/x' });
      expect(p.status).toBe(200);
      expect(p.body[field]).toBe('http://example.com:8080/x');
      const pa = await patch([{ op: 'replace', path: `/${field}`, value: 'https://example.org/' }]);
      expect(pa.status).toBe(200);
      expect(pa.body[field]).toBe('https://example.org/');
    });
  }

  it('refuses an http URL without a host and other schemes in disguise', async () => {
    for (const bad of ['http:example.com', 'http://', 'HTTPS:///nohost', 'data:text/html,hi', 'mailto:a@example.com']) {
      const r = await create({ logo_uri: bad });
      expect(r.status, bad).toBe(400);
      expect(r.body.error, bad).toBe('invalid_client_metadata');
    }
  });

  it('checks redirect URIs: no fragment, parseable', async () => {
    const frag = await create({ redirect_uris: ['https://a.example.com/cb#x'] });
    expect(frag.status).toBe(400);
    expect(frag.body).toEqual({
      error: 'invalid_redirect_uri',
      error_description:
        'The value of one or more redirect_uris is invalid. Redirect URIs must not contain fragments (#).',
    });
    const bad = await create({ redirect_uris: ['cb'] });
    expect(bad.body.error_description).toMatch(/Unable to parse redirect URL: cb$/);
    const custom = await create({ redirect_uris: ['com.example.app:/oauth', 'http://127.0.0.1:9000/cb'] });
    expect(custom.status).toBe(201);
  });

  it('refuses a secret shorter than 6 characters', async () => {
    const r = await create({ client_secret: 'short' });
    expect(r.body).toEqual({
      error: 'invalid_client_metadata',
      error_description: `${METADATA_DESC} Field client_secret must contain a secret that is at least 6 characters long.`,
    });
  });

  it('normalises CORS origins and refuses paths, credentials and other schemes', async () => {
    const ok = await create({ allowed_cors_origins: ['https://a.example.com/', 'http://b.example.com:8080'] });
    expect(ok.body.allowed_cors_origins).toEqual(['https://a.example.com', 'http://b.example.com:8080']);
    for (const [origin, hint] of [
      ['https://a.example.com/path', 'must have an empty path, query, and fragment'],
      ['https://u:p@a.example.com', 'has HTTP user and/or password set'],
      ['ftp://a.example.com', 'must use https:// or http:// as HTTP scheme'],
    ]) {
      const r = await create({ allowed_cors_origins: [origin] });
      expect(r.status, origin).toBe(400);
      expect(r.body.error_description, origin).toContain(hint);
    }
  });

  it('checks subject_type against oidc.subject_identifiers.supported_types', async () => {
    const r = await create({ subject_type: 'pairwise' });
    expect(r.status).toBe(400);
    expect(r.body.error_description).toContain(
      'Subject type pairwise is not supported by server, only [public] are allowed.',
    );
  });

  it('checks token_endpoint_auth_method, private_key_jwt keys and signing algorithms, jwks vs jwks_uri', async () => {
    expect((await create({ token_endpoint_auth_method: 'magic' })).status).toBe(400);
    const noKeys = await create({ token_endpoint_auth_method: 'private_key_jwt' });
    expect(noKeys.body.error_description).toContain('either jwks or jwks_uri must be set');
    const badAlg = await create({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://a.example.com/jwks',
      token_endpoint_auth_signing_alg: 'HS256',
    });
    expect(badAlg.body.error_description).toContain(
      'Only RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 and ES512',
    );
    const key = {
      kty: 'EC',
      crv: 'P-256',
      x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
      y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
    };
    const both = await create({ jwks: { keys: [key] }, jwks_uri: 'https://a.example.com/jwks' });
    expect(both.body.error_description).toContain('Fields jwks and jwks_uri can not both be set');
    const invalid = await create({ jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'nope' }] } });
    expect(invalid.body.error_description).toContain('Invalid JSON web key in set.');
    const good = await create({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key] } });
    expect(good.status).toBe(201);
    expect(good.body.jwks).toEqual({ keys: [key] });
    expect(good.body.client_secret).toMatch(/^.{26}$/);
  });

  it('checks userinfo_signed_response_alg, access_token_strategy and sector_identifier_uri', async () => {
    expect((await create({ userinfo_signed_response_alg: 'ES256' })).body.error_description).toContain(
      "Field userinfo_signed_response_alg can either be 'none' or 'RS256'.",
    );
    expect((await create({ access_token_strategy: 'paseto' })).body.error_description).toContain(
      'invalid access token strategy',
    );
    expect((await create({ access_token_strategy: 'JWT' })).body.access_token_strategy).toBe('jwt');
    expect((await create({ sector_identifier_uri: 'http://a.example.com/s.json' })).status).toBe(400);
  });

  it('needs each post_logout_redirect_uri to share scheme, host and port with a redirect URI', async () => {
    const ok = await create({
      redirect_uris: ['https://app.example.com:8443/cb'],
      post_logout_redirect_uris: ['https://app.example.com:8443/bye'],
    });
    expect(ok.status).toBe(201);
    const bad = await create({
      redirect_uris: ['https://app.example.com/cb'],
      post_logout_redirect_uris: ['https://app.example.com:8443/bye'],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error_description).toContain(
      "post_logout_redirect_uri 'https://app.example.com:8443/bye' must match the domain, port, scheme",
    );
  });

  it('answers a body of the wrong shape with 400, never 500', async () => {
    for (const body of [{ redirect_uris: 'https://x' }, { skip_consent: 'yes' }, [1, 2], '"text"', { jwks: 5 }]) {
      const r = await create(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('The request was malformed or contained invalid parameters');
    }
    const r = await create({ grant_types: [1] });
    expect(r.body.error_description).toMatch(/^Unable to decode the request body: field grant_types\.0/);
  });

  it('answers input PostgreSQL could not store with 400 or 404, never 500', async () => {
    const bodies = [
      JSON.stringify({ client_name: 'a\u0000b' }),
      JSON.stringify({ metadata: { ['k\u0000']: 1 } }),
      JSON.stringify({ implicit_grant_access_token_lifespan: '99999999999999999999999h' }),
      `{"metadata":${'['.repeat(5000)}${']'.repeat(5000)}}`,
      JSON.stringify({ client_id: 'x'.repeat(256) }),
    ];
    for (const body of bodies) {
      const r = await create(body);
      expect(r.status, body.slice(0, 60)).toBe(400);
      expect(r.body.error_description).toMatch(/^Unable to decode the request body: /);
    }
    expect((await create({ client_id: 'y'.repeat(255) })).status).toBe(201);
    for (const [method, path] of [
      ['GET', '/admin/clients/a%00b'],
      ['DELETE', '/admin/clients/a%00b'],
      ['PATCH', '/admin/clients/a%00b'],
    ] as const) {
      const r = await call(s.adminUrl, method, path, method === 'PATCH' ? [] : undefined);
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    const list = await call(s.adminUrl, 'GET', '/admin/clients?owner=%00&client_name=a%00');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
  });

  it('refuses bad JSON Patch documents with 400 and leaves the client unchanged', async () => {
    const before = (await call(s.adminUrl, 'GET', `/admin/clients/${existing}`)).body;
    const cases: Array<[unknown, string]> = [
      [[{ op: 'move', from: '/owner', path: '/client_name' }], 'unsupported operation: move'],
      [[{ op: 'copy', from: '/owner', path: '/client_name' }], 'unsupported operation: copy'],
      [[{ op: 'test', path: '/owner', value: '' }], 'unsupported operation: test'],
      [[{ op: 'replace', path: '/client_id', value: 'hijack' }], 'patch includes denied path: /client_id'],
      [[{ op: 'remove', path: '/client_id' }], 'patch includes denied path: /client_id'],
      [[{ op: 'remove', path: '/no/such/path' }], 'at /no/such/path'],
      [[{ op: 'replace', path: '/redirect_uris/7', value: 'https://x' }], 'at /redirect_uris/7'],
      [[{ op: 'add', path: 'client_name', value: 'x' }], 'invalid path'],
      [[{ op: 'add', path: '/client_name' }], 'has no value'],
      [{ op: 'add', path: '/client_name', value: 'x' }, 'must be a JSON array'],
      [[{ op: 'add', path: '/grant_types', value: 'code' }], 'Unable to decode the request body'],
    ];
    for (const [ops, text] of cases) {
      const r = await patch(ops);
      expect(r.status, JSON.stringify(ops)).toBe(400);
      expect(r.body.error_description, JSON.stringify(ops)).toContain(text);
    }
    const malformed = await call(s.adminUrl, 'PATCH', `/admin/clients/${existing}`, '[{"op":');
    expect(malformed.status).toBe(400);
    expect((await call(s.adminUrl, 'GET', `/admin/clients/${existing}`)).body).toEqual(before);
  });

  it('answers bad page tokens and page sizes with 400', async () => {
    const bad = await call(s.adminUrl, 'GET', '/admin/clients?page_token=garbage');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'The request was malformed or contained invalid parameters',
      error_description: 'Unable to parse pagination parameters: invalid pagination token',
    });
    const { encodePageToken } = await import('../../../src/core/pagination.ts');
    const { keyRing } = await import('../../../src/core/crypto/keys.ts');
    const ring = keyRing(s.container.config.secrets.system, 'pagination');
    const old = await encodePageToken(ring, 'oauth2_clients', { id: 'a' }, new Date(Date.now() - 2 * 3600_000));
    const expired = await call(s.adminUrl, 'GET', `/admin/clients?page_token=${old}`);
    expect(expired.status).toBe(400);
    expect(expired.body.error_description).toContain('page token expired');
    const other = await encodePageToken(ring, 'consent_sessions', { id: 'a' }, new Date());
    expect((await call(s.adminUrl, 'GET', `/admin/clients?page_token=${other}`)).body.error_description).toContain(
      'invalid pagination token',
    );
    expect((await call(s.adminUrl, 'GET', '/admin/clients?page_size=ten')).status).toBe(400);
  });
});
