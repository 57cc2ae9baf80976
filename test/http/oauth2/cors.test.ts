/**
 * CORS as Hydra configures it (`serve.public.cors`, `serve.admin.cors`) and per-client
 * `allowed_cors_origins` on the token, revocation and userinfo endpoints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileOrigin } from '../../../src/core/http/cors.ts';
import { LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { call } from '../../helpers/clients.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';
import { basic, tokenRequest } from '../../helpers/tokens.ts';

/** A token request sent from `origin`, with client_secret_basic. */
const tokenFrom = (t: TestServer, origin: string, client: CreatedClient, form: Record<string, string>) =>
  fetch(`${t.publicUrl}/oauth2/token`, {
    method: 'POST',
    headers: { origin, authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });

const machine = (extra: Record<string, unknown> = {}) => ({
  grant_types: ['client_credentials'],
  response_types: ['token'],
  scope: 'read',
  ...extra,
});

const preflight = (url: string, origin: string, method = 'POST', headers = 'authorization, content-type') =>
  fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

describe('origin patterns', () => {
  it('match like Hydra: * within a label, scheme://* any host, unbounded wildcards ignored', () => {
    const label = compileOrigin('https://*.example.com');
    expect(label?.('https://app.example.com')).toBe(true);
    expect(label?.('https://a.b.example.com')).toBe(false);
    expect(label?.('https://evilexample.com')).toBe(false);
    expect(label?.('http://app.example.com')).toBe(false);
    expect(compileOrigin('https://*')?.('https://a.b.c:8443')).toBe(true);
    expect(compileOrigin('https://*')?.('http://a.b')).toBe(false);
    expect(compileOrigin('https://*foo.com')).toBeUndefined();
    expect(compileOrigin('HTTPS://App.Example.com')?.('https://app.example.COM')).toBe(true);
  });
});

describe('serve.public.cors with allowed origins', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({
      overrides: {
        'serve.public.cors.enabled': true,
        'serve.public.cors.allowed_origins': ['https://*.allowed.example', 'https://exact.example'],
        'serve.public.cors.max_age': 600,
        'serve.public.cors.allow_credentials': false,
        'serve.admin.cors.enabled': true,
        'serve.admin.cors.allowed_origins': ['https://admin.example'],
      },
    });
  });
  afterAll(() => t?.close());

  it('answers a preflight itself (204) for an allowed origin, with Vary on the request headers', async () => {
    const r = await preflight(`${t.publicUrl}/.well-known/openid-configuration`, 'https://app.allowed.example', 'GET');
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.allowed.example');
    expect(r.headers.get('access-control-allow-methods')).toBe('GET');
    expect(r.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    expect(r.headers.get('access-control-max-age')).toBe('600');
    expect(r.headers.get('access-control-allow-credentials')).toBeNull();
    expect(r.headers.get('vary')).toContain('Origin');
    expect(r.headers.get('vary')).toContain('Access-Control-Request-Method');
    expect(await r.text()).toBe('');
  });

  it('preflights of routes without per-client origins refuse other origins, methods and headers', async () => {
    const other = await preflight(`${t.publicUrl}/oauth2/auth`, 'https://evil.example', 'GET');
    expect(other.status).toBe(204);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const header = await preflight(`${t.publicUrl}/oauth2/auth`, 'https://exact.example', 'GET', 'x-custom');
    expect(header.headers.get('access-control-allow-origin')).toBeNull();
    const method = await preflight(`${t.publicUrl}/oauth2/auth`, 'https://exact.example', 'FOO');
    expect(method.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('adds headers to actual requests from allowed origins only; Vary: Origin always', async () => {
    const ok = await fetch(`${t.publicUrl}/.well-known/jwks.json`, { headers: { origin: 'https://exact.example' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://exact.example');
    expect(ok.headers.get('access-control-expose-headers')).toContain('Content-Type');
    expect(ok.headers.get('vary')).toContain('Origin');
    const refused = await fetch(`${t.publicUrl}/.well-known/jwks.json`, {
      headers: { origin: 'https://evil.example' },
    });
    expect(refused.status).toBe(200);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect(refused.headers.get('vary')).toContain('Origin');
    const none = await fetch(`${t.publicUrl}/.well-known/jwks.json`);
    expect(none.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('honours a client’s allowed_cors_origins at the token endpoint (basic auth and client_id in the form)', async () => {
    const client = await createClient(t, machine({ allowed_cors_origins: ['https://spa.example'] }));
    const viaBasic = await tokenFrom(t, 'https://spa.example', client, {
      grant_type: 'client_credentials',
      scope: 'read',
    });
    expect(viaBasic.status).toBe(200);
    expect(viaBasic.headers.get('access-control-allow-origin')).toBe('https://spa.example');
    // An error answer carries the headers too, so that the script can read it.
    const post = await fetch(`${t.publicUrl}/oauth2/token`, {
      method: 'POST',
      headers: { origin: 'https://spa.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id }),
    });
    expect(post.status).toBe(401);
    expect(post.headers.get('access-control-allow-origin')).toBe('https://spa.example');
    // Another origin, or another client without it, gets no headers.
    const other = await createClient(t, machine());
    const refused = await tokenFrom(t, 'https://spa.example', other, { grant_type: 'client_credentials' });
    expect(refused.status).toBe(200);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('per-client routes accept any preflight (it carries no credentials); others do not', async () => {
    const token = await preflight(`${t.publicUrl}/oauth2/token`, 'https://spa.example');
    expect(token.headers.get('access-control-allow-origin')).toBe('https://spa.example');
    const revoke = await preflight(`${t.publicUrl}/oauth2/revoke`, 'https://spa.example');
    expect(revoke.headers.get('access-control-allow-origin')).toBe('https://spa.example');
    const logout = await preflight(`${t.publicUrl}/oauth2/sessions/logout`, 'https://spa.example', 'GET');
    expect(logout.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('identifies the client from the bearer token at userinfo and from the form at revocation', async () => {
    const client = await createClient(t, machine({ allowed_cors_origins: ['https://*.spa.example'] }));
    const tok = await tokenRequest(t, client, { grant_type: 'client_credentials', scope: 'read' });
    const at = tok.body.access_token as string;
    const info = await fetch(`${t.publicUrl}/userinfo`, {
      headers: { origin: 'https://app.spa.example', authorization: `Bearer ${at}` },
    });
    expect(info.headers.get('access-control-allow-origin')).toBe('https://app.spa.example');
    const wrong = await fetch(`${t.publicUrl}/userinfo`, {
      headers: { origin: 'https://evil.example', authorization: `Bearer ${at}` },
    });
    expect(wrong.headers.get('access-control-allow-origin')).toBeNull();
    const unknown = await fetch(`${t.publicUrl}/userinfo`, {
      headers: { origin: 'https://app.spa.example', authorization: 'Bearer ory_at_nope.nope' },
    });
    expect(unknown.headers.get('access-control-allow-origin')).toBeNull();
    const rev = await fetch(`${t.publicUrl}/oauth2/revoke`, {
      method: 'POST',
      headers: {
        origin: 'https://app.spa.example',
        authorization: basic(client),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token: at }),
    });
    expect(rev.status).toBe(200);
    expect(rev.headers.get('access-control-allow-origin')).toBe('https://app.spa.example');
    // A JSON body names no client (only a form's client_id does, as Go's PostFormValue).
    const json = await fetch(`${t.publicUrl}/credentials`, {
      method: 'POST',
      headers: { origin: 'https://app.spa.example', 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.client_id, format: 'jwt_vc_json' }),
    });
    expect(json.status).toBe(401);
    expect(json.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('serve.admin.cors applies to the admin listener on its own (introspection included)', async () => {
    const pre = await preflight(`${t.adminUrl}/admin/oauth2/introspect`, 'https://admin.example');
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://admin.example');
    const spa = await preflight(`${t.adminUrl}/admin/oauth2/introspect`, 'https://exact.example');
    expect(spa.headers.get('access-control-allow-origin')).toBeNull();
    const r = await fetch(`${t.adminUrl}/admin/clients`, { headers: { origin: 'https://admin.example' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('https://admin.example');
    expect(r.headers.get('access-control-allow-credentials')).toBe('true');
  });
});

describe('CORS disabled (the default)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('sends no CORS headers and leaves OPTIONS to the routes', async () => {
    const client = await createClient(t, machine({ allowed_cors_origins: ['https://spa.example'] }));
    const r = await tokenFrom(t, 'https://spa.example', client, { grant_type: 'client_credentials' });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await preflight(`${t.publicUrl}/oauth2/token`, 'https://spa.example');
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('serve.public.cors with no allowed origins (every origin) and credentials', () => {
  let t: TestServer;
  const logs = new LogCapture();
  beforeAll(async () => {
    t = await startTestServer({ overrides: { 'serve.public.cors.enabled': true }, log: logs.logger('warn') });
  });
  afterAll(() => t?.close());

  it('answers Access-Control-Allow-Origin: * and never credentials, and warns once at start-up', async () => {
    const r = await fetch(`${t.publicUrl}/.well-known/openid-configuration`, {
      headers: { origin: 'https://anything.example' },
    });
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('access-control-allow-credentials')).toBeNull();
    const pre = await preflight(`${t.publicUrl}/oauth2/token`, 'https://evil.example');
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    // Even the origin a client lists gets no credentials here: every origin is allowed alike.
    const client = await createClient(t, machine({ allowed_cors_origins: ['https://spa.example'] }));
    const tok = await tokenFrom(t, 'https://spa.example', client, { grant_type: 'client_credentials', scope: 'read' });
    expect(tok.status).toBe(200);
    expect(tok.headers.get('access-control-allow-origin')).toBe('*');
    expect(tok.headers.get('access-control-allow-credentials')).toBeNull();
    const warned = logs.entries().filter((e) => String(e.msg).includes('allow_credentials is ignored'));
    expect(warned).toHaveLength(1);
  });
});

/** Origins that made the former regular expression of `https://**.**.**.**:1` backtrack. */
const manyLabels = (bytes: number, end: string, label = 'a') => {
  let host = label;
  while (host.length + label.length + end.length + 10 < bytes) host += `.${label}`;
  return `https://${host}${end}`;
};

describe('origin patterns from clients: refused at dynamic registration, bounded at matching', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({
      overrides: {
        'serve.public.cors.enabled': true,
        'serve.public.cors.allowed_origins': ['https://exact.example'],
        'oidc.dynamic_client_registration.enabled': true,
      },
    });
  });
  afterAll(() => t?.close());

  it('refuses wildcards and anything but a plain origin in a self-registered client', async () => {
    for (const origin of [
      'https://**.**.**.**:1',
      'https://*.example.com',
      'https://*',
      'https://app?.example.com',
      'https://{a,b}.example.com',
      'https://app.example.com/path',
      'https://u:p@app.example.com',
      'https://',
      'https://a%2eb.example.com',
    ]) {
      const r = await call(t.publicUrl, 'POST', '/oauth2/register', { allowed_cors_origins: [origin] });
      expect(r.status, origin).toBe(400);
      expect(r.body.error, origin).toBe('invalid_client_metadata');
      expect(r.body.error_description, origin).toContain(origin);
    }
    const wild = await call(t.publicUrl, 'POST', '/oauth2/register', {
      allowed_cors_origins: ['https://**.**.**.**:1'],
    });
    expect(wild.body.error_description).toContain('not allowed for dynamic client registration');
    const ok = await call(t.publicUrl, 'POST', '/oauth2/register', {
      allowed_cors_origins: ['https://spa.example/', 'http://localhost:3000', 'http://[::1]:8080'],
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.allowed_cors_origins).toEqual(['https://spa.example', 'http://localhost:3000', 'http://[::1]:8080']);
  });

  it('refuses an admin-written * that is not a whole host label, and keeps whole-label wildcards', async () => {
    for (const origin of ['https://*foo.example.com', 'https://app-*.example.com', 'https://a.**b.example.com']) {
      const r = await call(t.adminUrl, 'POST', '/admin/clients', machine({ allowed_cors_origins: [origin] }));
      expect(r.status, origin).toBe(400);
      expect(r.body.error, origin).toBe('invalid_client_metadata');
      expect(r.body.error_description, origin).toContain('not a whole host label');
    }
    const ok = await call(
      t.adminUrl,
      'POST',
      '/admin/clients',
      machine({ allowed_cors_origins: ['https://*.a.example'] }),
    );
    expect(ok.status).toBe(201);
  });

  it('answers a token request with a 10 kB or a many-label Origin against ** patterns, and allows a matching one', async () => {
    const client = await createClient(
      t,
      machine({ allowed_cors_origins: ['https://**.**.**.**:1', 'https://**.spa.example'] }),
    );
    const form = { grant_type: 'client_credentials', scope: 'read' };
    for (const origin of [
      manyLabels(10_000, ':2'),
      manyLabels(10_000, '.spa.example.x'),
      manyLabels(1_000, ':2'),
      manyLabels(1_000, '.:1', 'abcdefgh'),
      `https://${'a'.repeat(990)}:1`,
    ]) {
      const r = await tokenFrom(t, origin, client, form);
      expect(r.status, `${origin.length} bytes`).toBe(200);
      expect(r.headers.get('access-control-allow-origin'), `${origin.length} bytes`).toBeNull();
    }
    for (const origin of ['https://a.b.c.d:1', manyLabels(1_000, ':1', 'abcdefgh'), 'https://x.y.spa.example']) {
      const r = await tokenFrom(t, origin, client, form);
      expect(r.status).toBe(200);
      expect(r.headers.get('access-control-allow-origin')).toBe(origin);
      // An origin the client lists (not an allow-all) may still get credentials.
      expect(r.headers.get('access-control-allow-credentials')).toBe('true');
    }
    expect((await fetch(`${t.publicUrl}/health/alive`)).status).toBe(200);
  });
});
