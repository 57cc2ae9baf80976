/**
 * Fuzz (fast-check, fixed seed, bounded runs): malformed requests against the public OAuth 2.0 /
 * OpenID Connect endpoints and introspection. Every answer is an error in the OAuth2 shape with a
 * 4xx status (or, for the authorization endpoint, an error delivered to the client or the error
 * page), never a 500 or a stack trace, and nothing stored changes.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  type Answer,
  expectErrorBody,
  expectNoLeak,
  fuzzParams,
  junk,
  label,
  send,
  watchStoredState,
  wrong,
} from '../../helpers/fuzz.ts';
import { CB, type CreatedClient, createClient } from '../../helpers/oauth2.ts';

let s: TestServer;
let conf: CreatedClient;
let pub: CreatedClient;

beforeAll(async () => {
  // The failed-authentication limiter would answer most attempts with 429 after a few runs; the
  // fuzzers are after the code behind it (the limiter has its own test).
  s = await startTestServer({ overrides: { 'rate_limit.failed_auth.enabled': false } });
  conf = await createClient(s, {
    grant_types: [
      'authorization_code',
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:jwt-bearer',
      'urn:ietf:params:oauth:grant-type:token-exchange',
    ],
    response_types: ['code', 'id_token', 'code id_token', 'token'],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  pub = await createClient(s, { token_endpoint_auth_method: 'none' });
});
afterAll(() => s?.close());
const { unchanged } = watchStoredState(() => s);

/** Header-safe text (fetch refuses control characters and code points above 0xFF in headers). */
const headerText = fc.stringMatching(/^[\x20-\x7e]{0,80}$/);

/** Placeholders in generated values, resolved once the clients exist. */
const resolve = (v: string): string =>
  v === '$CONF'
    ? conf.client_id
    : v === '$PUB'
      ? pub.client_id
      : v === '$CONF_BASIC'
        ? basic(conf.client_id, conf.client_secret ?? '')
        : v.startsWith('$BASIC')
          ? basic(
              ...((JSON.parse(v.slice(6)) as [string, string]).map((x, i) => (i === 0 ? resolve(x) : x)) as [
                string,
                string,
              ]),
            )
          : v;
const resolveAll = <T extends Record<string, string>>(o: T): T =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolve(v)])) as T;

const form = (fields: Array<[string, string]>) => new URLSearchParams(fields).toString();
const enc = (v: string) => {
  try {
    return encodeURIComponent(v);
  } catch {
    return v; // a lone surrogate: sent as is (UTF-8 replacement), which is malformed too
  }
};
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;

describe('POST /oauth2/token', () => {
  const auth = fc.oneof(
    fc.constant({ headers: {}, fields: [] as Array<[string, string]> }),
    fc.tuple(fc.constantFrom('conf', 'unknown'), wrong).map(([who, secret]) => ({
      headers: { authorization: `$BASIC${JSON.stringify([who === 'conf' ? '$CONF' : `zz-${secret}`, secret])}` },
      fields: [] as Array<[string, string]>,
    })),
    headerText.map((h) => ({ headers: { authorization: h }, fields: [] as Array<[string, string]> })),
    wrong.map((secret) => ({
      headers: {},
      fields: [
        ['client_id', '$CONF'],
        ['client_secret', secret],
      ] as Array<[string, string]>,
    })),
    fc
      .tuple(fc.constantFrom('urn:ietf:params:oauth:client-assertion-type:jwt-bearer', 'zz'), junk)
      .map(([type, assertion]) => ({
        headers: {},
        fields: [
          ['client_id', '$CONF'],
          ['client_assertion_type', type],
          ['client_assertion', assertion],
        ] as Array<[string, string]>,
      })),
    fc.constant({ headers: {}, fields: [['client_id', '$PUB']] as Array<[string, string]> }),
    // The right credentials: the grant's own checks must refuse the junk that follows.
    fc.constant({ headers: { authorization: '$CONF_BASIC' }, fields: [] as Array<[string, string]> }),
    wrong.map((id) => ({ headers: {}, fields: [['client_id', id]] as Array<[string, string]> })),
  );
  const grant = fc.oneof(
    fc.record({
      grant_type: fc.constant('authorization_code'),
      code: junk,
      redirect_uri: fc.oneof(fc.constant(CB), junk),
      code_verifier: junk,
    }),
    fc.record({ grant_type: fc.constant('refresh_token'), refresh_token: junk, scope: junk }),
    fc.record({ grant_type: fc.constant('client_credentials'), scope: wrong, audience: junk }),
    fc.record({ grant_type: fc.constant('urn:ietf:params:oauth:grant-type:jwt-bearer'), assertion: junk, scope: junk }),
    fc.record({
      grant_type: fc.constant('urn:ietf:params:oauth:grant-type:token-exchange'),
      subject_token: junk,
      subject_token_type: fc.oneof(
        fc.constantFrom('urn:ietf:params:oauth:token-type:access_token', 'urn:ietf:params:oauth:token-type:jwt'),
        junk,
      ),
      actor_token: junk,
      resource: junk,
    }),
    fc.record({ grant_type: junk }),
    fc.record({ grant_type: fc.constantFrom('password', 'implicit', 'urn:ietf:params:oauth:grant-type:device_code') }),
    fc.constant({}),
  );
  const encoding = fc.constantFrom('form', 'form-duplicated', 'json', 'text', 'none');
  /** A DPoP header (RFC 9449): none, junk, or a JWT-shaped one that cannot verify. */
  const dpop = fc.option(
    fc.oneof(headerText, fc.constant('eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2In0.eyJqdGkiOiJ4In0.c2ln')),
    { nil: undefined },
  );

  it('answers every malformed or unauthenticated request with an OAuth2 error, storing nothing', async () => {
    await fc.assert(
      fc.asyncProperty(auth, grant, encoding, dpop, async (a, g, enc, proof) => {
        const fields: Array<[string, string]> = [...a.fields, ...Object.entries(g)].map(([k, v]) => [k, resolve(v)]);
        if (enc === 'form-duplicated') fields.push(...fields.slice(0, 1));
        const body =
          enc === 'json'
            ? JSON.stringify(Object.fromEntries(fields))
            : enc === 'text'
              ? fields.map(([k, v]) => `${k}=${v}`).join('&')
              : form(fields);
        const type =
          enc === 'json' ? 'application/json' : enc === 'text' ? 'text/plain' : 'application/x-www-form-urlencoded';
        const r = await send(`${s.publicUrl}/oauth2/token`, {
          method: 'POST',
          headers: {
            ...resolveAll(a.headers),
            ...(enc === 'none' ? {} : { 'content-type': type }),
            ...(proof === undefined ? {} : { dpop: proof }),
          },
          ...(enc === 'none' ? {} : { body }),
        });
        const what = label({ a, g, enc, proof });
        expectErrorBody(r, 'hydra', what);
        await unchanged(what);
      }),
      fuzzParams(60),
    );
  });
});

/** The authorization endpoint may answer with an error page/JSON, or send the error to the client or the error URL. */
function expectAuthorizeError(r: Answer, what: string) {
  expectNoLeak(r, what);
  expect(r.status, `${what} → ${r.status} ${r.text.slice(0, 200)}`).not.toBeGreaterThanOrEqual(500);
  if (r.status >= 300 && r.status < 400) {
    const loc = r.headers.get('location') ?? '';
    expect(loc, what).not.toMatch(/login_challenge|consent_challenge/);
    const u = new URL(loc, s.publicUrl);
    const err = u.searchParams.get('error') ?? new URLSearchParams(u.hash.slice(1)).get('error');
    expect(err, `${what} → ${loc}`).toBeTruthy();
    return;
  }
  if (r.status === 200) {
    // response_mode=form_post delivers the error in an auto-submitted form to the client.
    expect(r.headers.get('content-type'), what).toMatch(/^text\/html/);
    expect(r.text, what).toMatch(/name="error"/);
    return;
  }
  if ((r.headers.get('content-type') ?? '').startsWith('application/json')) expectErrorBody(r, 'hydra', what);
  else expect(r.status, what).toBeGreaterThanOrEqual(400);
}

describe('GET and POST /oauth2/auth', () => {
  const base = {
    client_id: () => conf.client_id,
    response_type: 'code',
    redirect_uri: CB,
    scope: 'openid',
    state: 'state-0123456789',
    nonce: 'nonce-0123456789',
  };
  // One parameter that is certainly wrong, plus random noise in the others.
  const breakage = fc.oneof(
    wrong.map((v) => ({ client_id: v })),
    wrong.map((v) => ({ redirect_uri: v })),
    wrong.map((v) => ({ response_type: v })),
    wrong.map((v) => ({ scope: `openid ${v.replaceAll(' ', '')}x` })),
    wrong.map((v) => ({ request: v })),
    fc
      .constantFrom(
        'eyJhbGciOiJub25lIn0.eyJzY29wZSI6Im9wZW5pZCJ9.',
        'eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJzY29wZSI6Im9wZW5pZCJ9.c2ln',
        'a.b.c.d.e',
      )
      .map((v) => ({ request: v })),
    wrong.map((v) => ({ request_uri: v })),
    wrong.map((v) => ({ response_mode: v })),
    wrong.map((v) => ({ prompt: v.replaceAll(' ', '') || 'zz' })),
    wrong.map((v) => ({ code_challenge: 'c'.repeat(43), code_challenge_method: v })),
    fc.constant({ response_type: 'token', response_mode: 'query' }),
    fc.constant({ prompt: 'none' }),
  );
  const noise = fc.dictionary(
    fc.constantFrom(
      'state',
      'nonce',
      'max_age',
      'ui_locales',
      'login_hint',
      'acr_values',
      'audience',
      'claims',
      'display',
      'id_token_hint',
      'registration',
      'resource',
      'dpop_jkt',
    ),
    junk,
    { maxKeys: 3 },
  );
  const mode = fc.constantFrom('query', 'form_post', undefined);
  const method = fc.constantFrom('GET', 'POST');

  it('answers every invalid authorization request with an error, creating no flow', async () => {
    await fc.assert(
      fc.asyncProperty(breakage, noise, mode, method, async (b, n, m, verb) => {
        const params: Record<string, string> = {
          ...Object.fromEntries(Object.entries(base).map(([k, v]) => [k, typeof v === 'function' ? v() : v])),
          ...(m ? { response_mode: m } : {}),
          ...n,
          ...b,
        };
        const q = new URLSearchParams(params).toString();
        const r =
          verb === 'GET'
            ? await send(`${s.publicUrl}/oauth2/auth?${q}`)
            : await send(`${s.publicUrl}/oauth2/auth`, {
                method: 'POST',
                headers: { 'content-type': 'application/x-www-form-urlencoded' },
                body: q,
              });
        const what = label({ verb, params });
        expectAuthorizeError(r, what);
        await unchanged(what);
      }),
      fuzzParams(60),
    );
  });

  it('POST /oauth2/par: every invalid or unauthenticated push is an OAuth2 error, and nothing is stored', async () => {
    const credentials = fc.constantFrom('right', 'wrong secret', 'none', 'public');
    await fc.assert(
      fc.asyncProperty(breakage, noise, credentials, async (b, n, who) => {
        // prompt=none is refused at /oauth2/auth (no session to reuse), not when pushed.
        fc.pre((b as { prompt?: string }).prompt !== 'none');
        const params: Record<string, string> = {
          ...Object.fromEntries(Object.entries(base).map(([k, v]) => [k, typeof v === 'function' ? v() : v])),
          ...n,
        };
        if (who === 'public') params.client_id = pub.client_id;
        if (who === 'none') delete params.client_id;
        Object.assign(params, b);
        const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
        if (who === 'right') headers.authorization = basic(conf.client_id, conf.client_secret ?? '');
        if (who === 'wrong secret') headers.authorization = basic(conf.client_id, 'zz-wrong');
        const r = await send(`${s.publicUrl}/oauth2/par`, {
          method: 'POST',
          headers,
          body: new URLSearchParams(params).toString(),
        });
        const what = label({ who, params });
        expect(r.status, `${what} → ${r.status} ${r.text.slice(0, 200)}`).not.toBe(201);
        expectErrorBody(r, 'hydra', what);
        await unchanged(what);
      }),
      fuzzParams(60),
    );
  });
});

describe('introspection, revocation, userinfo and logout', () => {
  it('POST /admin/oauth2/introspect: junk tokens are inactive or a 4xx error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('token', 'token_type_hint', 'scope', 'x'), junk, { maxKeys: 3 }),
        fc.constantFrom('form', 'json'),
        async (f, enc) => {
          const r = await send(`${s.adminUrl}/admin/oauth2/introspect`, {
            method: 'POST',
            headers: { 'content-type': enc === 'json' ? 'application/json' : 'application/x-www-form-urlencoded' },
            body: enc === 'json' ? JSON.stringify(f) : form(Object.entries(f)),
          });
          const what = label({ f, enc });
          if (r.status === 200) expect(JSON.parse(r.text), what).toEqual({ active: false });
          else expectErrorBody(r, 'hydra', what);
          await unchanged(what);
        },
      ),
      fuzzParams(40),
    );
  });

  it('POST /oauth2/revoke: wrong client authentication is 401, a junk token with a right one revokes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          wrong.map((secret) => ({ authorization: `$BASIC${JSON.stringify(['$CONF', secret])}` })),
          headerText.map((h) => ({ authorization: h })),
          fc.constant({ authorization: '$CONF_BASIC' }),
          fc.constant({}),
        ),
        fc.dictionary(fc.constantFrom('token', 'token_type_hint', 'client_id'), junk, { maxKeys: 3 }),
        async (h, f) => {
          const r = await send(`${s.publicUrl}/oauth2/revoke`, {
            method: 'POST',
            headers: {
              ...resolveAll(h as Record<string, string>),
              'content-type': 'application/x-www-form-urlencoded',
            },
            body: form(Object.entries(f)),
          });
          const what = label({ h, f });
          if (r.status === 200) expect(r.text, what).toBe('');
          else expectErrorBody(r, 'hydra', what);
          await unchanged(what);
        },
      ),
      fuzzParams(40),
    );
  });

  it('GET and POST /userinfo: junk credentials are 401 with WWW-Authenticate', async () => {
    await fc.assert(
      fc.asyncProperty(
        headerText,
        fc.constantFrom('GET', 'POST'),
        fc.constantFrom('Bearer ', '', 'bearer ', 'Basic '),
        async (tok, verb, scheme) => {
          const r = await send(`${s.publicUrl}/userinfo`, {
            method: verb,
            headers: { authorization: `${scheme}${tok}` },
          });
          const what = label({ tok, verb, scheme });
          expectErrorBody(r, 'hydra', what);
          expect(r.status, what).toBe(401);
          expect(r.headers.get('www-authenticate'), what).toMatch(/^Bearer /);
          await unchanged(what);
        },
      ),
      fuzzParams(30),
    );
  });

  it('GET and POST /oauth2/sessions/logout: a junk id_token_hint or redirect is an error, no logout request is stored', async () => {
    await fc.assert(
      fc.asyncProperty(
        wrong,
        fc.dictionary(fc.constantFrom('post_logout_redirect_uri', 'state', 'client_id', 'ui_locales'), junk, {
          maxKeys: 3,
        }),
        fc.constantFrom('GET', 'POST'),
        async (hint, extra, verb) => {
          const q = new URLSearchParams({ id_token_hint: hint, ...extra }).toString();
          const r =
            verb === 'GET'
              ? await send(`${s.publicUrl}/oauth2/sessions/logout?${q}`)
              : await send(`${s.publicUrl}/oauth2/sessions/logout`, {
                  method: 'POST',
                  headers: { 'content-type': 'application/x-www-form-urlencoded' },
                  body: q,
                });
          const what = label({ hint, extra, verb });
          expectAuthorizeError(r, what);
          await unchanged(what);
        },
      ),
      fuzzParams(30),
    );
  });
});
