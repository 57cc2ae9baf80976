/**
 * Authorization and body types, generated from the route tables: every route of both listeners
 * (with every optional surface on: the v1 API on both listeners, the console, the development pages,
 * dynamic registration), under every spelling of its path, without credentials, and with bodies of
 * every type. A route added tomorrow is covered by this file the day it is added.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashAdminKey } from '../../../src/core/http/admin-auth.ts';
import {
  canonicalPath,
  type DeclaredRoute,
  listenerRoutes,
  routePolicyMarkdown,
} from '../../../src/core/http/routes.ts';
import { listenerTables } from '../../../src/server.ts';
import { LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { consoleSignIn, cookieHeader, type Jar } from '../../helpers/console.ts';
import { API_KEY } from '../../helpers/dsync.ts';
import { brokenBody, fuzzParams } from '../../helpers/fuzz.ts';

/** Access names that let anyone through by design: open pages, the open admin API, open registration. */
const OPEN = new Set(['public', 'admin', 'dynamic-registration']);
const BODY_METHODS = new Set(['post', 'put', 'patch']);

type Kind = 'public' | 'admin';
let t: TestServer;
let tables: ReturnType<typeof listenerTables>;
const matchers = {} as Record<Kind, ReturnType<typeof listenerRoutes>>;

beforeAll(async () => {
  t = await startTestServer({
    overrides: {
      'dsync.api_keys': [API_KEY],
      'dsync.api.listener': 'both',
      'dev_ui.enabled': true,
      'console.operators': ['ada@example.com'],
      'oidc.dynamic_client_registration.enabled': true,
    },
  });
  tables = listenerTables(t.container);
  const pass = () => async (_ctx: unknown, next: () => Promise<void>) => next();
  for (const kind of ['public', 'admin'] as const) {
    matchers[kind] = listenerRoutes(tables[kind].routes, {
      guards: tables[kind].guards,
      bodyLimits: { default: 1, scim: 1, admin: 1 },
      failedAuth: pass,
    });
  }
});
afterAll(async () => t?.close());

/** A concrete path of a route: each parameter gets a value of its own. */
const concrete = (path: string) => path.replace(/:(\w+)/g, (_m, name: string) => `${name}0`);

interface Spelling {
  name: string;
  path: string;
}

/** Other spellings of `path` that name the same resource (the canonical form is the same). */
function sameSpellings(path: string, kind: Kind): Spelling[] {
  const segs = path.split('/').slice(1);
  const at = (i: number, insert: string) => `/${[...segs.slice(0, i), insert, ...segs.slice(i)].join('/')}`;
  const letter = path.search(/[a-z]/i);
  const code = path.charCodeAt(letter).toString(16);
  const out: Spelling[] = [
    { name: 'trailing slash', path: `${path}/` },
    { name: 'double slash', path: path.replace('/', '//') },
    { name: 'inner double slash', path: segs.length > 1 ? `/${segs[0]}//${segs.slice(1).join('/')}` : `${path}//` },
    { name: 'dot segment', path: at(1, '.') },
    { name: 'encoded dot segment', path: at(1, '%2e') },
    { name: 'dot-dot segment', path: at(1, 'zz/..') },
    { name: 'encoded dot-dot', path: at(1, 'zz/%2E%2e') },
    { name: 'encoded letter', path: `${path.slice(0, letter)}%${code}${path.slice(letter + 1)}` },
  ];
  if (kind === 'admin' && path.startsWith('/admin/')) out.push({ name: 'without /admin', path: path.slice(6) });
  return out;
}

/** Spellings that are other paths: they must name no route, or a route with its own policy. */
function otherSpellings(path: string): Spelling[] {
  const segs = path.split('/').slice(1);
  const out: Spelling[] = [
    { name: 'upper case', path: path.toUpperCase() },
    {
      name: 'first segment capitalised',
      path: `/${(segs[0] ?? '').replace(/^./, (c) => c.toUpperCase())}/${segs.slice(1).join('/')}`,
    },
  ];
  const last = path.lastIndexOf('/');
  if (last > 0) out.push({ name: 'encoded slash', path: `${path.slice(0, last)}%2F${path.slice(last + 1)}` });
  return out;
}

const urlOf = (kind: Kind, path: string) => `${kind === 'public' ? t.publicUrl : t.adminUrl}${path}`;

async function call(kind: Kind, method: string, path: string, init: RequestInit = {}) {
  const res = await fetch(urlOf(kind, path), { ...init, method: method.toUpperCase(), redirect: 'manual' });
  await res.arrayBuffer();
  return res.status;
}

/** The route a spelling resolves to, as the listener resolves it. */
function resolved(kind: Kind, path: string, method: string): DeclaredRoute | undefined {
  let p = canonicalPath(path);
  if (kind === 'admin' && !p.startsWith('/admin/') && p !== '/admin' && !p.startsWith('/api/')) p = `/admin${p}`;
  return matchers[kind].match(p, method.toUpperCase());
}

const routesOf = (kind: Kind) =>
  tables[kind].routes.flatMap((r) =>
    (r.method === 'all' ? (['get', 'post'] as const) : [r.method]).map((method) => ({ route: r, method })),
  );

describe('route policies from the route tables', () => {
  it('every route declares an access with a guard and known body types, and the tables cover both listeners', () => {
    for (const kind of ['public', 'admin'] as const) {
      expect(tables[kind].routes.length).toBeGreaterThan(kind === 'public' ? 40 : 100);
      for (const r of tables[kind].routes) {
        expect(r.policy.access, `${r.method} ${r.path}`).toBeTruthy();
        if (r.policy.access !== 'public') expect(tables[kind].guards[r.policy.access]).toBeDefined();
      }
    }
  });

  for (const kind of ['public', 'admin'] as const) {
    it(`${kind}: without credentials, a guarded route never answers 2xx, under any spelling, and equal spellings answer alike`, async () => {
      let checked = 0;
      for (const { route, method } of routesOf(kind)) {
        const path = concrete(route.path);
        const guarded = !OPEN.has(route.policy.access);
        const status = await call(kind, method, path);
        const where = `${kind} ${method.toUpperCase()} ${path} (${route.policy.access})`;
        if (guarded) expect(status < 200 || status >= 300, where).toBe(true);
        for (const s of sameSpellings(path, kind)) {
          // Sanity of the generator: the spelling resolves to the very route.
          expect(resolved(kind, s.path, method), `${where} as ${s.name}`).toBe(resolved(kind, path, method));
          const other = await call(kind, method, s.path);
          expect(other, `${where} as ${s.name}: ${s.path}`).toBe(status);
          checked++;
        }
        for (const s of otherSpellings(path)) {
          const target = resolved(kind, s.path, method);
          const other = await call(kind, method, s.path);
          const note = `${where} as ${s.name}: ${s.path} → ${other}`;
          if (!target) expect([404, 405], note).toContain(other);
          else if (!OPEN.has(target.policy.access)) expect(other < 200 || other >= 300, note).toBe(true);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(500);
    });

    it(`${kind}: bodies of a type a route does not take are 415 (form, multipart and text/plain only where declared)`, async () => {
      const key = { authorization: `Api-Key ${API_KEY}` };
      const bodies = [
        { type: 'form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' },
        { type: 'text', headers: { 'content-type': 'text/plain' }, body: '{"a":1}' },
        {
          type: 'multipart',
          headers: { 'content-type': 'multipart/form-data; boundary=x' },
          body: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n',
        },
        // Bytes: fetch sends a string body as text/plain.
        { type: 'untyped from a browser', headers: { origin: 'https://evil.example' }, body: Buffer.from('{"a":1}') },
      ];
      let refused = 0;
      for (const { route, method } of routesOf(kind)) {
        if (!BODY_METHODS.has(method)) continue;
        // Where the guard lets the request through without a session: open routes and the Api-Key.
        const through = OPEN.has(route.policy.access) || route.policy.access === 'api-key';
        if (!through) continue;
        const accepts = route.policy.body ?? [];
        for (const b of bodies) {
          const status = await call(kind, method, concrete(route.path), {
            headers: { ...b.headers, ...(route.policy.access === 'api-key' ? key : {}) },
            body: b.body,
          });
          const where = `${kind} ${method.toUpperCase()} ${route.path} with a ${b.type} body`;
          if (b.type === 'form' && accepts.includes('form')) expect(status, where).not.toBe(415);
          else {
            expect(status, where).toBe(415);
            refused++;
          }
        }
      }
      expect(refused).toBeGreaterThan(kind === 'admin' ? 60 : 10);
    });
  }

  it('a JSON route reads a body without Content-Type as JSON from a caller without Origin (Hydra’s clients post so)', async () => {
    const res = await fetch(`${t.adminUrl}/admin/clients`, {
      method: 'POST',
      // Bytes: fetch sends a string body as text/plain.
      body: Buffer.from(JSON.stringify({ client_id: 'untyped-json-client', grant_types: ['client_credentials'] })),
    });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { client_id: string }).client_id).toBe('untyped-json-client');
    const v1 = await fetch(`${t.adminUrl}/api/v1/dsync`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${API_KEY}` },
      body: Buffer.from(JSON.stringify({ tenant: 't-untyped', product: 'p', type: 'okta-scim-v2' })),
    });
    expect(v1.status).toBe(201);
  });

  it('the route-policy table of docs/security.md is the route tables (npm run docs:routes rewrites it)', () => {
    const file = new URL('../../../docs/security.md', import.meta.url);
    const page = readFileSync(file, 'utf8');
    const [start, end] = ['<!-- routes:start -->', '<!-- routes:end -->'];
    const a = page.indexOf(start);
    const b = page.indexOf(end);
    expect(a).toBeGreaterThan(0);
    // The default placement of the v1 API: the admin listener only.
    const table = routePolicyMarkdown({
      public: { ...tables.public, routes: tables.public.routes.filter((r) => !r.path.startsWith('/api/v1/')) },
      admin: tables.admin,
    });
    const current = `${page.slice(0, a + start.length)}\n${table}\n${page.slice(b)}`;
    if (process.env.UPDATE_DOCS === '1') writeFileSync(file, current);
    expect(readFileSync(file, 'utf8')).toBe(current);
  });

  it('the console answers only through its guard, whatever the spelling, and lets a signed-in operator through', async () => {
    const jar: Jar = new Map();
    await consoleSignIn(t, 'ada@example.com', 'gatehouse-dev', jar, '/console');
    let through = 0;
    for (const r of tables.admin.routes.filter((x) => x.tag === 'console' && x.method === 'get')) {
      const path = concrete(r.path).replace(/^\/admin/, '');
      const anonymous = await call('admin', 'get', path);
      const signedIn = await call('admin', 'get', path, { headers: { cookie: cookieHeader(jar) } });
      if (r.policy.access === 'operator') {
        // Anonymous: sent to sign in. Signed in: the page (or its own 404 for the made-up id).
        expect(anonymous, path).toBe(302);
        expect([200, 404], path).toContain(signedIn);
        through++;
      }
    }
    expect(through).toBeGreaterThan(15);
  });
});

describe('the admin API with serve.admin.auth on', () => {
  let locked: TestServer;
  let lockedTables: ReturnType<typeof listenerTables>;
  beforeAll(async () => {
    locked = await startTestServer({
      overrides: {
        'serve.admin.auth.enabled': true,
        'serve.admin.auth.api_keys': [hashAdminKey('gha_route-policy-key-0000000000')],
        'dsync.api_keys': [API_KEY],
        'console.operators': ['ada@example.com'],
        // Hundreds of refusals from one address: every answer here is the guard's, never the limiter's.
        'rate_limit.failed_auth.enabled': false,
      },
    });
    lockedTables = listenerTables(locked.container);
  });
  afterAll(async () => locked?.close());

  const refuses = async (method: string, path: string, where: string) => {
    const res = await fetch(`${locked.adminUrl}${path}`, { method: method.toUpperCase(), redirect: 'manual' });
    await res.arrayBuffer();
    expect(res.status, where).toBe(401);
    expect(res.headers.get('www-authenticate'), where).toBe('Bearer realm="gatehouse-admin"');
  };

  it('every admin route declares a family, and refuses without a credential under every spelling', async () => {
    const admin = lockedTables.admin.routes.filter((r) => r.policy.access === 'admin');
    expect(admin.length).toBeGreaterThan(30);
    let checked = 0;
    for (const route of admin) {
      expect(route.policy.family, route.path).toBeTruthy();
      for (const method of route.method === 'all' ? ['get', 'post'] : [route.method]) {
        const path = concrete(route.path);
        const where = `${method.toUpperCase()} ${path}`;
        await refuses(method, path, where);
        for (const s of sameSpellings(path, 'admin')) await refuses(method, s.path, `${where} as ${s.name}: ${s.path}`);
        for (const s of otherSpellings(path)) {
          const target = resolved('admin', s.path, method);
          if (target?.policy.access === 'admin') await refuses(method, s.path, `${where} as ${s.name}: ${s.path}`);
        }
        checked++;
      }
    }
    expect(checked).toBe(admin.length);
  });

  it('health and version stay open; the console and the v1 API keep their own guards', async () => {
    for (const path of ['/health/alive', '/health/ready', '/version', '/admin/health/alive', '/api/health']) {
      expect((await fetch(`${locked.adminUrl}${path}`)).status, path).toBe(200);
    }
    expect((await fetch(`${locked.adminUrl}/console/clients`, { redirect: 'manual' })).status).toBe(302);
    const v1 = await fetch(`${locked.adminUrl}/api/v1/dsync?tenant=a&product=b`, {
      headers: { authorization: `Api-Key ${API_KEY}` },
    });
    expect(v1.status).toBe(200);
  });
});

describe('fuzz: path spellings and content types', () => {
  it('no spelling and no content type opens a guarded route without its credential, and none is a 500', async () => {
    const guarded = (['public', 'admin'] as const).flatMap((kind) =>
      routesOf(kind)
        .filter(({ route }) => !OPEN.has(route.policy.access))
        .map(({ route, method }) => ({ kind, method, path: concrete(route.path) })),
    );
    expect(guarded.length).toBeGreaterThan(50);
    const edit = fc.record({
      at: fc.nat(),
      kind: fc.constantFrom(
        'upper',
        'lower',
        'encode',
        'slash',
        'dot',
        'dotdot',
        'encoded-slash',
        'encoded-dot',
        'backslash',
      ),
    });
    const type = fc.constantFrom(
      undefined,
      'application/json',
      'Application/JSON; charset=utf-7',
      'application/scim+json',
      'application/json-patch+json',
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      '*/*',
    );
    const spelled = (path: string, edits: Array<{ at: number; kind: string }>) => {
      let p = path;
      for (const e of edits) {
        const i = 1 + (e.at % Math.max(1, p.length - 1));
        const ch = p[i] ?? '';
        const put = (x: string, drop = 0) => {
          p = p.slice(0, i) + x + p.slice(i + drop);
        };
        if (e.kind === 'upper') put(ch.toUpperCase(), 1);
        else if (e.kind === 'lower') put(ch.toLowerCase(), 1);
        else if (e.kind === 'encode' && ch && ch !== '%') put(`%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`, 1);
        else if (e.kind === 'slash') put('/');
        else if (e.kind === 'dot') put('/./');
        else if (e.kind === 'dotdot') put('/zz/../');
        else if (e.kind === 'encoded-slash' && ch === '/') put('%2F', 1);
        else if (e.kind === 'encoded-dot') put('/%2e/');
        else if (e.kind === 'backslash' && ch === '/') put('\\', 1);
      }
      return p;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.array(edit, { maxLength: 4 }),
        type,
        fc.option(brokenBody, { nil: undefined }),
        fc.boolean(),
        async (n, edits, contentType, body, withOrigin) => {
          const r = guarded[n % guarded.length] as (typeof guarded)[number];
          const method = r.method;
          const path = spelled(r.path, edits);
          const headers: Record<string, string> = {
            ...(contentType ? { 'content-type': contentType } : {}),
            ...(withOrigin ? { origin: 'https://evil.example' } : {}),
          };
          const sendsBody = BODY_METHODS.has(method) && body !== undefined;
          const status = await call(r.kind, method, path, {
            headers,
            ...(sendsBody ? { body: Buffer.from(body as string) } : {}),
          });
          const note = `${r.kind} ${method.toUpperCase()} ${path} (${contentType ?? 'untyped'}) → ${status}`;
          expect(status < 200 || status >= 300, note).toBe(true);
          expect(status, note).toBeLessThan(500);
        },
      ),
      fuzzParams(300),
    );
  });
});

describe('the walk-arounds found in review, through real HTTP', () => {
  it('setup-link tokens in paths are never written to the request log: the route template is', async () => {
    const logs = new LogCapture();
    const s = await startTestServer({ log: logs.logger('info'), overrides: { 'dsync.api_keys': [API_KEY] } });
    try {
      const created = await fetch(`${s.adminUrl}/api/v1/dsync/setuplinks`, {
        method: 'POST',
        headers: { authorization: `Api-Key ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          tenant: 'acme',
          product: 'app',
          webhook_url: 'https://hooks.example/x',
          webhook_secret: 'whsec-0123456789',
        }),
      });
      expect(created.status).toBe(201);
      const url = ((await created.json()) as { data: { url: string } }).data.url;
      const token = url.split('/setup/')[1] ?? '';
      expect(token.length).toBeGreaterThan(20);
      for (const p of [`/api/setup/${token}/directory-sync`, `/api/setup/${token}`, `/api/setup/${token}/nope`]) {
        await (await fetch(`${s.publicUrl}${p}`)).arrayBuffer();
      }
      const lines = logs.lines.filter((l) => l.includes('request completed'));
      expect(lines.length).toBeGreaterThanOrEqual(4);
      expect(logs.lines.join('\n')).not.toContain(token);
      const paths = logs.entries().map((e) => e.path);
      expect(paths).toContain('/api/setup/:token/directory-sync');
      expect(paths).toContain('/api/setup/:token');
      // No route: the path is logged with its long segments elided.
      expect(paths).toContain('/api/setup/…/nope');
    } finally {
      await s.close();
    }
  });

  it('a change of case in the v1 directory-sync API finds no route (was: 200 without the key)', async () => {
    expect(await call('admin', 'get', '/api/v1/dsync?tenant=a&product=b')).toBe(401);
    expect(await call('admin', 'get', '/api/V1/dsync?tenant=a&product=b')).toBe(404);
    expect(await call('public', 'get', '/api/V1/dsync?tenant=a&product=b')).toBe(404);
    expect(await call('admin', 'post', '/api/V1/dsync', { body: '{"tenant":"a","product":"b"}' })).toBe(404);
    expect(await call('admin', 'get', '/api/v1/DSYNC/setuplinks/product?product=b')).toBe(404);
    expect(
      await call('admin', 'post', '/api/V1/dsync/d1/google/authorization-link', { body: '{"replace_workspace":true}' }),
    ).toBe(404);
    // Spellings that are the same path are the same route, with its guard.
    for (const p of ['/api/v1//dsync', '/api/v1/./dsync', '/api/v1/%64sync', '/api/v1/dsync/', '/api/v1/x/../dsync']) {
      expect(await call('admin', 'get', `${p}?tenant=a&product=b`), p).toBe(401);
    }
  });

  it('a change of case in the console finds no route (was: the client list without a session)', async () => {
    expect(await call('admin', 'get', '/CONSOLE/clients')).toBe(404);
    expect(await call('admin', 'get', '/Console/clients')).toBe(404);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(await call('admin', 'post', '/CONSOLE/clients', { headers: form, body: 'client_id=walk-around' })).toBe(404);
    expect(
      await call('admin', 'post', '/Console/trust', {
        headers: form,
        body: 'issuer=https://evil.example&allow_any_subject=1',
      }),
    ).toBe(404);
    expect(await call('admin', 'get', '/console/clients')).toBe(302);
    expect(await call('admin', 'get', '//console//clients/')).toBe(302);
    const res = await fetch(`${t.adminUrl}/admin/clients/walk-around`);
    expect(res.status).toBe(404);
  });

  it('the admin API refuses form bodies, which any web page can post across origins (was: 201)', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' };
    const client = await fetch(`${t.adminUrl}/admin/clients`, {
      method: 'POST',
      headers: form,
      body: 'client_id=evil-client&client_secret=attacker-chosen-secret&grant_types[]=client_credentials',
    });
    expect(client.status).toBe(415);
    const trust = await fetch(`${t.adminUrl}/admin/trust/grants/jwt-bearer/issuers`, {
      method: 'POST',
      headers: form,
      body: 'issuer=https://evil.example&subject=alice@corp.example&scope[]=openid&expires_at=2099-01-01T00:00:00Z',
    });
    expect(trust.status).toBe(415);
    const text = await fetch(`${t.adminUrl}/admin/clients`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: 'https://evil.example' },
      body: JSON.stringify({ client_id: 'evil-text-client' }),
    });
    expect(text.status).toBe(415);
    for (const id of ['evil-client', 'evil-text-client']) {
      expect((await fetch(`${t.adminUrl}/admin/clients/${id}`)).status).toBe(404);
    }
  });
});
