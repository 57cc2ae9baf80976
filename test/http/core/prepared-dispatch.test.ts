/**
 * Prepared documents answered before the Koa chain (core/http/apps.ts, preparedDispatch): while a
 * document is ready, `GET`/`HEAD` of its exact path get what the chain would send (request id,
 * ETag and 304, Cache-Control, `Vary: Origin` under CORS, the request line, the HTTP metrics);
 * everything else, and a document not ready, goes to Koa. On a real server the discovery document
 * and the JWKS come out the same both ways.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, requestListener } from '../../../src/core/http/apps.ts';
import { type PreparedDocument, type PreparedRoute, prepareJson } from '../../../src/core/http/prepared.ts';
import { RouteTable } from '../../../src/core/http/routes.ts';
import { renderMetrics } from '../../../src/core/observability/metrics.ts';
import { eventually, LogCapture, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { parsePrometheus, sample } from '../../helpers/prometheus.ts';

const DOC = prepareJson({ keys: [{ kid: 'k1', kty: 'EC' }], note: 'prepared – ünïcode' });

/** An app whose Koa route at the same path answers `{"via":"koa"}`, so the two ways can be told apart. */
async function serveApp(o: { cors?: boolean; urlLimit?: number } = {}) {
  let doc: PreparedDocument | undefined = DOC;
  const document = Object.assign(async () => DOC, { ready: () => doc });
  const prepared: PreparedRoute[] = [{ path: '/doc', document, cacheControl: 'public, max-age=60' }];
  const table = new RouteTable();
  const router = table.group({ access: 'public', body: ['json'] });
  router.get('/doc', (ctx) => {
    ctx.body = { via: 'koa' };
  });
  router.post('/doc', (ctx) => {
    ctx.body = { via: 'koa' };
  });
  const logs = new LogCapture();
  const app = createApp({
    kind: 'public',
    log: logs.logger('info'),
    routes: table.routes,
    prepared,
    ...(o.urlLimit ? { urlLimit: o.urlLimit } : {}),
    ...(o.cors
      ? {
          cors: {
            enabled: true,
            allowed_origins: ['https://rp.example'],
            allowed_methods: ['GET', 'POST'],
            allowed_headers: [],
            exposed_headers: [],
            allow_credentials: false,
            max_age: 0,
            debug: false,
          },
        }
      : {}),
  });
  const server: Server = createServer(requestListener(app));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    logs,
    setReady: (ready: boolean) => {
      doc = ready ? DOC : undefined;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const requests = async (route: string, status: string) =>
  sample(parsePrometheus(await renderMetrics()), 'gatehouse_http_requests_total', {
    listener: 'public',
    route,
    method: 'GET',
    status,
  });

describe('a prepared document before the Koa chain', () => {
  let a: Awaited<ReturnType<typeof serveApp>>;
  beforeAll(async () => {
    a = await serveApp();
  });
  afterAll(async () => {
    await a?.close();
  });

  it('answers GET of its path with the document, its ETag, Cache-Control, length and a request id', async () => {
    const before = await requests('/doc', '200');
    const r = await fetch(`${a.url}/doc?ignored=1`, { headers: { 'x-request-id': 'req-42.a:b' } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(DOC.body);
    expect(r.headers.get('etag')).toBe(DOC.etag);
    expect(r.headers.get('cache-control')).toBe('public, max-age=60');
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(DOC.body));
    expect(r.headers.get('x-request-id')).toBe('req-42.a:b');
    expect(r.headers.get('vary')).toBeNull();
    // A malformed request id is replaced, as the chain does.
    const bad = await fetch(`${a.url}/doc`, { headers: { 'x-request-id': 'no spaces <allowed>' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    await bad.text();
    // The request line and the metrics under the route's template.
    const line = a.logs.entries().find((e) => e.requestId === 'req-42.a:b');
    expect(line).toMatchObject({
      msg: 'request completed',
      listener: 'public',
      method: 'GET',
      path: '/doc',
      status: 200,
    });
    expect(line).not.toHaveProperty('ignored');
    expect(JSON.stringify(line)).not.toContain('ignored=1'); // never the query string
    expect(await requests('/doc', '200')).toBe(before + 2);
  });

  it('answers 304 without a body on a matching If-None-Match (weak, listed or *), 200 otherwise', async () => {
    for (const inm of [DOC.etag, `W/${DOC.etag}`, `"other", ${DOC.etag}`, '*']) {
      const r = await fetch(`${a.url}/doc`, { headers: { 'if-none-match': inm } });
      expect(r.status, inm).toBe(304);
      expect(r.headers.get('etag')).toBe(DOC.etag);
      expect(r.headers.get('cache-control')).toBe('public, max-age=60');
      expect(await r.text()).toBe('');
    }
    const r = await fetch(`${a.url}/doc`, { headers: { 'if-none-match': '"other"' } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(DOC.body);
  });

  it('answers HEAD with the headers and no body', async () => {
    const r = await fetch(`${a.url}/doc`, { method: 'HEAD' });
    expect(r.status).toBe(200);
    expect(r.headers.get('etag')).toBe(DOC.etag);
    expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(DOC.body));
    expect(await r.text()).toBe('');
  });

  it('leaves other methods and paths, and a document not ready, to the Koa chain', async () => {
    const post = await fetch(`${a.url}/doc`, { method: 'POST' });
    expect(await post.json()).toEqual({ via: 'koa' });
    const slash = await fetch(`${a.url}/doc/`);
    expect(await slash.json()).toEqual({ via: 'koa' }); // normalised by the chain, not matched here
    a.setReady(false);
    try {
      const r = await fetch(`${a.url}/doc`);
      expect(await r.json()).toEqual({ via: 'koa' });
    } finally {
      a.setReady(true);
    }
    expect(await (await fetch(`${a.url}/doc`)).text()).toBe(DOC.body);
  });
});

describe('with CORS and a URL limit', () => {
  it('sends Vary: Origin under CORS, and leaves a request with an Origin to the chain (per-client origins)', async () => {
    const a = await serveApp({ cors: true });
    try {
      const r = await fetch(`${a.url}/doc`);
      expect(await r.text()).toBe(DOC.body);
      expect(r.headers.get('vary')).toBe('Origin');
      const withOrigin = await fetch(`${a.url}/doc`, { headers: { origin: 'https://rp.example' } });
      expect(await withOrigin.json()).toEqual({ via: 'koa' });
      expect(withOrigin.headers.get('access-control-allow-origin')).toBe('https://rp.example');
    } finally {
      await a.close();
    }
  });

  it('leaves a target that may exceed the URL limit to the chain, which answers 414', async () => {
    const a = await serveApp({ urlLimit: 100 });
    try {
      expect(await (await fetch(`${a.url}/doc?q=1`)).text()).toBe(DOC.body);
      const long = await fetch(`${a.url}/doc?q=${'x'.repeat(200)}`);
      expect(long.status).toBe(414);
      await long.text();
    } finally {
      await a.close();
    }
  });
});

describe('the discovery document and the JWKS on a real server', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  /** Status, body and headers but the per-request ones. */
  const answer = async (path: string) => {
    const r = await fetch(`${s.publicUrl}${path}`);
    const headers = Object.fromEntries([...r.headers].filter(([k]) => k !== 'date' && k !== 'x-request-id'));
    return { status: r.status, body: await r.text(), headers };
  };

  it('are the same before the chain and through it (a trailing slash takes the chain)', async () => {
    await eventually(async () => s.container.changes.live());
    for (const path of [
      '/.well-known/jwks.json',
      '/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
    ]) {
      await answer(path); // prepares it
      const routeBefore = await requests(path, '200');
      const fast = await answer(path);
      const chain = await answer(`${path}/`);
      expect(fast.status).toBe(200);
      expect(fast).toEqual(chain);
      expect(fast.headers.etag).toMatch(/^"[\w-]{43}"$/);
      expect(await requests(path, '200')).toBe(routeBefore + 2);
    }
  });

  it('are rebuilt when a key changes, before the next answer', async () => {
    const kids = async () =>
      ((await (await fetch(`${s.publicUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map(
        (k) => k.kid,
      );
    const before = await kids();
    const created = await fetch(`${s.adminUrl}/admin/keys/hydra.openid.id-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alg: 'ES256', kid: 'dispatch-new' }),
    });
    expect(created.status).toBe(201);
    // The write went through this process: its answer shows the key at once, as the chain's did.
    const after = await kids();
    expect(after).toContain('dispatch-new');
    expect(after.length).toBe(before.length + 1);
    const discovery = (await (await fetch(`${s.publicUrl}/.well-known/openid-configuration`)).json()) as {
      id_token_signing_alg_values_supported: string[];
    };
    expect(discovery.id_token_signing_alg_values_supported).toContain('ES256');
  });
});
