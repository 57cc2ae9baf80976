/**
 * Fuzz (fast-check, fixed seed, bounded runs): malformed requests against the Hydra admin API —
 * clients, keys, login/consent/logout flows, sessions and trusted JWT grant issuers. Every answer
 * is a Hydra error body with a 4xx status (never a 500 or a stack trace), except reads and deletes
 * of what does not exist where Hydra answers an empty success; nothing stored changes either way.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  type Answer,
  anyJson,
  brokenBody,
  brokenNonObject,
  expectErrorBody,
  expectNoLeak,
  fuzzParams,
  junk,
  label,
  seg,
  send,
  watchStoredState,
  wrong,
} from '../../helpers/fuzz.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';

let s: TestServer;
let client: CreatedClient;

beforeAll(async () => {
  s = await startTestServer();
  client = await createClient(s, { client_name: 'fuzz target', token_endpoint_auth_method: 'client_secret_post' });
  const k = await send(`${s.adminUrl}/admin/keys/fuzz-set`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ alg: 'ES256', use: 'sig', kid: 'fuzz-kid' }),
  });
  expect(k.status).toBe(201);
  const t = await send(`${s.adminUrl}/admin/trust/grants/jwt-bearer/issuers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      issuer: 'https://issuer.example',
      allow_any_subject: true,
      scope: ['openid'],
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      jwk: (JSON.parse(k.text) as { keys: Array<Record<string, unknown>> }).keys.map(({ d: _d, ...pub }) => ({
        ...pub,
        kid: 'trust-kid',
      }))[0],
    }),
  });
  expect(t.status, t.text).toBe(201);
});
afterAll(() => s?.close());
const { unchanged } = watchStoredState(() => s);

const json = (method: string, body: unknown, type = 'application/json'): RequestInit => ({
  method,
  headers: { 'content-type': type },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

/**
 * A 4xx Hydra error, or (reads and deletes of what does not exist) one of the given success
 * statuses with no body or a list (`empty`: that must be empty).
 */
function expectRefusedOr(r: Answer, what: string, ok: number[] = [], empty = true) {
  if (ok.includes(r.status)) {
    expectNoLeak(r, what);
    if (r.text) {
      const v = JSON.parse(r.text) as unknown;
      expect(Array.isArray(v), what).toBe(true);
      if (empty) expect(v, what).toEqual([]);
    }
    return;
  }
  expectErrorBody(r, 'hydra', what);
}

describe('/admin/clients', () => {
  // A valid client body with one field certainly wrong (and maybe a wrong type elsewhere).
  const breakage = fc.oneof(
    // grant_types and response_types values are not validated at registration (as in Hydra).
    wrong.map((v) => ({ token_endpoint_auth_method: v })),
    wrong.map((v) => ({ subject_type: v })),
    wrong.map((v) => ({ access_token_strategy: v })),
    wrong.map((v) => ({ redirect_uris: [v] })),
    wrong.map((v) => ({ allowed_cors_origins: [v] })),
    wrong.map((v) => ({ jwks: { keys: v } })),
    wrong.map((kty) => ({ jwks: { keys: [{ kty, kid: 'k' }] } })),
    fc.constant({ jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] } }),
    fc.constant({ client_secret: 'abc' }),
    fc.constantFrom(
      { redirect_uris: 12 },
      { grant_types: 'authorization_code' },
      { scope: 42 },
      { audience: 'x' },
      { contacts: { a: 1 } },
      { client_name: ['x'] },
      { skip_consent: 'yes' },
      { authorization_code_grant_access_token_lifespan: 'forever' },
    ),
  );
  const body = fc.tuple(breakage, fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 2 }));

  it('POST and PUT refuse every invalid client, PATCH every invalid patch', async () => {
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('POST', 'PUT'), async ([b, extra], verb) => {
        const payload = { redirect_uris: ['https://rp.example/cb'], ...extra, ...b };
        const path = verb === 'POST' ? '/admin/clients' : `/admin/clients/${client.client_id}`;
        const r = await send(`${s.adminUrl}${path}`, json(verb, payload));
        const what = label({ verb, payload });
        expectErrorBody(r, 'hydra', what);
        await unchanged(what);
      }),
      fuzzParams(50),
    );
    const patch = fc.oneof(
      fc
        .array(
          fc.record({
            op: fc.oneof(fc.constantFrom('add', 'replace', 'remove', 'move', 'copy'), junk),
            path: junk,
            value: anyJson,
          }),
          { minLength: 1, maxLength: 3 },
        )
        .map((ops) => [...ops, { op: 'test', path: '/client_name', value: 'zz-never' }]),
      wrong.map((v) => [{ op: 'replace', path: '/token_endpoint_auth_method', value: v }]),
      fc.constantFrom(
        [{ op: 'replace', path: '/client_id', value: 'other' }],
        [{ op: 'replace', path: '/redirect_uris', value: 'x' }],
        [{ op: 'remove', path: '/nope/deeper' }],
        [{ op: 'add', path: '/__proto__/polluted', value: 1 }],
        { op: 'replace' },
      ),
      brokenBody,
    );
    await fc.assert(
      fc.asyncProperty(patch, async (p) => {
        const r = await send(`${s.adminUrl}/admin/clients/${client.client_id}`, json('PATCH', p));
        const what = label(p);
        expectErrorBody(r, 'hydra', what);
        await unchanged(what);
      }),
      fuzzParams(50),
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('lifespans, broken bodies, unknown ids and list parameters', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({
            kind: fc.constant('lifespans'),
            body: fc
              .tuple(
                fc.constantFrom(
                  'authorization_code_grant_access_token_lifespan',
                  'refresh_token_grant_refresh_token_lifespan',
                ),
                fc.oneof(wrong, fc.integer(), fc.constant(['1h'])),
                fc.dictionary(fc.string({ maxLength: 6 }), junk, { maxKeys: 2 }),
              )
              .map(([k, v, extra]) => ({ ...extra, [k]: v })),
          }),
          fc.record({ kind: fc.constant('broken'), body: brokenNonObject, verb: fc.constantFrom('POST', 'PUT') }),
          fc.record({
            kind: fc.constant('unknown'),
            id: wrong,
            verb: fc.constantFrom('GET', 'DELETE', 'PUT', 'PATCH'),
          }),
          fc.record({
            kind: fc.constant('list'),
            q: fc.dictionary(fc.constantFrom('page_size', 'page_token', 'client_name', 'owner', 'x'), junk, {
              maxKeys: 3,
            }),
          }),
        ),
        async (c) => {
          const what = label(c);
          let r: Answer;
          if (c.kind === 'lifespans') {
            r = await send(`${s.adminUrl}/admin/clients/${client.client_id}/lifespans`, json('PUT', c.body));
            expectErrorBody(r, 'hydra', what);
          } else if (c.kind === 'broken') {
            const path = c.verb === 'POST' ? '/admin/clients' : `/admin/clients/${client.client_id}`;
            r = await send(`${s.adminUrl}${path}`, json(c.verb, c.body as string));
            expectErrorBody(r, 'hydra', what);
          } else if (c.kind === 'unknown') {
            const body =
              c.verb === 'PUT' ? { redirect_uris: ['https://rp.example/cb'] } : c.verb === 'PATCH' ? [] : undefined;
            r = await send(
              `${s.adminUrl}/admin/clients/${seg(c.id)}`,
              body === undefined ? { method: c.verb } : json(c.verb, body),
            );
            expectErrorBody(r, 'hydra', what);
          } else {
            r = await send(`${s.adminUrl}/admin/clients?${new URLSearchParams(c.q)}`);
            if (r.status === 200) {
              expectNoLeak(r, what);
              expect(Array.isArray(JSON.parse(r.text)), what).toBe(true);
            } else expectErrorBody(r, 'hydra', what);
          }
          await unchanged(what);
        },
      ),
      fuzzParams(60),
    );
  });
});

describe('/admin/keys', () => {
  it('refuses invalid key generation and imports; unknown sets and keys are 404', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({
            kind: fc.constant('create'),
            body: fc.oneof(
              wrong.map((alg) => ({ alg, use: 'sig' })),
              wrong.map((use) => ({ alg: 'RS256', use })),
              fc.constantFrom({}, { alg: 5 }, { alg: 'HS256', use: 'sig' }, { alg: 'none', use: 'sig' }),
              brokenBody,
            ),
          }),
          fc.record({
            kind: fc.constant('put-set'),
            body: fc.oneof(
              wrong.map((v) => ({ keys: v })),
              wrong.map((kty) => ({ keys: [{ kty, kid: 'k' }] })),
              fc.constantFrom(
                { keys: [{ kty: 'RSA', kid: 'k', n: 'AQAB' }] },
                { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] },
              ),
              brokenBody,
            ),
          }),
          fc.record({
            kind: fc.constant('put-key'),
            body: fc.oneof(
              wrong.map((kty) => ({ kty, kid: 'fuzz-kid' })),
              fc.constantFrom(
                { kty: 'EC', kid: 'fuzz-kid', crv: 'P-256', x: 'x', y: 'y' },
                { kty: 'RSA', kid: 'fuzz-kid', e: 'AQAB' },
              ),
              brokenBody,
            ),
          }),
          fc.record({
            kind: fc.constant('unknown'),
            set: wrong,
            kid: fc.option(wrong),
            verb: fc.constantFrom('GET', 'DELETE'),
          }),
        ),
        async (c) => {
          const what = label(c);
          let r: Answer;
          if (c.kind === 'create') r = await send(`${s.adminUrl}/admin/keys/fuzz-new`, json('POST', c.body));
          else if (c.kind === 'put-set') r = await send(`${s.adminUrl}/admin/keys/fuzz-set`, json('PUT', c.body));
          else if (c.kind === 'put-key')
            r = await send(`${s.adminUrl}/admin/keys/fuzz-set/fuzz-kid`, json('PUT', c.body));
          else
            r = await send(`${s.adminUrl}/admin/keys/${seg(c.set)}${c.kid === null ? '' : `/${seg(c.kid)}`}`, {
              method: c.verb,
            });
          // Deleting a key or set that does not exist is a 204, as in Hydra.
          if (c.kind === 'unknown' && c.verb === 'DELETE') expectRefusedOr(r, what, [204]);
          else expectErrorBody(r, 'hydra', what);
          await unchanged(what);
        },
      ),
      fuzzParams(60),
    );
  });
});

describe('/admin/oauth2/auth/requests (login, consent, logout)', () => {
  it('refuses unknown or malformed challenges and bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('login', 'consent', 'logout'),
        fc.constantFrom('', '/accept', '/reject'),
        fc.option(junk),
        fc.oneof(
          fc.dictionary(fc.constantFrom('subject', 'remember', 'grant_scope', 'error', 'session', 'acr'), anyJson, {
            maxKeys: 3,
          }),
          brokenBody,
        ),
        async (kind, action, challenge, body) => {
          const q = challenge === null ? '' : `?${kind}_challenge=${seg(challenge)}`;
          const url = `${s.adminUrl}/admin/oauth2/auth/requests/${kind}${action}${q}`;
          const r = await send(url, action ? json('PUT', body) : {});
          const what = label({ kind, action, challenge, body });
          expectErrorBody(r, 'hydra', what);
          await unchanged(what);
        },
      ),
      fuzzParams(60),
    );
  });
});

describe('/admin/oauth2/auth/sessions and /admin/trust/grants/jwt-bearer/issuers', () => {
  it('sessions: malformed queries are 400, queries about nobody find and delete nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET consent', 'DELETE consent', 'DELETE login'),
        fc.dictionary(
          fc.constantFrom(
            'subject',
            'client',
            'all',
            'login_session_id',
            'sid',
            'consent_request_id',
            'page_size',
            'page_token',
          ),
          wrong,
          { maxKeys: 3 },
        ),
        async (op, q) => {
          const [verb, kind] = op.split(' ') as [string, string];
          const r = await send(`${s.adminUrl}/admin/oauth2/auth/sessions/${kind}?${new URLSearchParams(q)}`, {
            method: verb,
          });
          const what = label({ op, q });
          expectRefusedOr(r, what, verb === 'GET' ? [200] : [204]);
          await unchanged(what);
        },
      ),
      fuzzParams(50),
    );
  });

  it('trust: invalid grants, unknown ids and list parameters', async () => {
    const good = {
      issuer: 'https://other.example',
      subject: 'alice',
      scope: ['openid'],
      expires_at: '2099-01-01T00:00:00Z',
      jwk: {
        kty: 'EC',
        crv: 'P-256',
        kid: 'k',
        x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
        y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
      },
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({
            kind: fc.constant('create'),
            body: fc.oneof(
              wrong.map((v) => ({ ...good, expires_at: v })),
              wrong.map((v) => ({ ...good, jwk: { kty: v } })),
              fc.constantFrom(
                { ...good, issuer: '' },
                { ...good, subject: '', allow_any_subject: false },
                { ...good, allow_any_subject: true },
                { ...good, scope: 'openid' },
              ),
              brokenBody,
            ),
          }),
          fc.record({ kind: fc.constant('unknown'), id: wrong, verb: fc.constantFrom('GET', 'DELETE') }),
          fc.record({
            kind: fc.constant('list'),
            q: fc.dictionary(fc.constantFrom('page_size', 'page_token', 'issuer'), wrong, { maxKeys: 2 }),
          }),
        ),
        async (c) => {
          const base = `${s.adminUrl}/admin/trust/grants/jwt-bearer/issuers`;
          const what = label(c);
          let r: Answer;
          if (c.kind === 'create') {
            r = await send(base, json('POST', c.body));
            expectErrorBody(r, 'hydra', what);
          } else if (c.kind === 'unknown') {
            r = await send(`${base}/${seg(c.id)}`, { method: c.verb });
            expectErrorBody(r, 'hydra', what);
          } else {
            r = await send(`${base}?${new URLSearchParams(c.q)}`);
            expectRefusedOr(r, what, [200], false);
          }
          await unchanged(what);
        },
      ),
      fuzzParams(50),
    );
  });
});

describe('what the fuzzers found (kept as fixed examples)', () => {
  it('a NUL byte in a query or path parameter is a 400, not a 500', async () => {
    for (const url of [
      `${s.adminUrl}/admin/oauth2/auth/sessions/consent?subject=a%00b`,
      `${s.adminUrl}/admin/keys/a%00b/c`,
      `${s.adminUrl}/admin/clients/a%00b`,
      `${s.adminUrl}/admin/trust/grants/jwt-bearer/issuers/a%00b`,
    ]) {
      for (const method of ['GET', 'DELETE']) {
        const r = await send(url, { method });
        expectErrorBody(r, 'hydra', `${method} ${url}`);
        expect([400, 404], url).toContain(r.status);
      }
    }
    const tok = await send(`${s.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=a%00b&client_secret=x',
    });
    expectErrorBody(tok, 'hydra', 'token with NUL client_id');
  });

  it('POST, PUT and the lifespans PUT without a body are 400 and change nothing', async () => {
    for (const [method, path] of [
      ['POST', '/admin/clients'],
      ['PUT', `/admin/clients/${client.client_id}`],
      ['PUT', `/admin/clients/${client.client_id}/lifespans`],
    ] as const) {
      const r = await send(`${s.adminUrl}${path}`, { method, headers: { 'content-type': 'application/json' } });
      expectErrorBody(r, 'hydra', `${method} ${path}`);
      expect(r.status).toBe(400);
    }
    await unchanged('bodiless writes');
  });
});
