/**
 * The OpenAPI documents of both listeners: every route registered on a listener is documented, and
 * every operation of the official `@ory/hydra-client` SDK resolves to a registered route with the
 * same method (and is documented under its operation id).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiPath } from '../../../src/core/http/openapi.ts';
import { listenerRoutes, RouteTable } from '../../../src/core/http/routes.ts';
import { OAUTH2_ROUTES } from '../../../src/oauth2/routes.ts';
import { listenerTables, OPENAPI_PATHS } from '../../../src/server.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';

type Doc = { openapi: string; paths: Record<string, Record<string, { operationId: string }>> };
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** (operation, METHOD, path) of every SDK operation, read from the SDK's generated client. */
function sdkOperations(): Array<{ op: string; method: string; path: string }> {
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('@ory/hydra-client/package.json'));
  const src = readFileSync(join(dir, 'dist/api.js'), 'utf8');
  const re = /\n\s{8}(\w+): \([^)]*\) => __awaiter[\s\S]*?const localVarPath = `([^`]+)`[\s\S]*?method: '(\w+)'/g;
  const out = new Map<string, { op: string; method: string; path: string }>();
  for (const m of src.matchAll(re))
    out.set(m[1] as string, { op: m[1] as string, method: m[3] as string, path: m[2] as string });
  return [...out.values()];
}

describe('OpenAPI documents', () => {
  let t: TestServer;
  const docs: Record<'public' | 'admin', Doc> = {} as never;
  beforeAll(async () => {
    t = await startTestServer();
    docs.public = (await (await fetch(`${t.publicUrl}${OPENAPI_PATHS.public}`)).json()) as Doc;
    docs.admin = (await (await fetch(`${t.adminUrl}${OPENAPI_PATHS.admin}`)).json()) as Doc;
  });
  afterAll(() => t?.close());

  it('are served as OpenAPI 3.1 with unique operation ids and zod-derived request schemas', async () => {
    for (const kind of ['public', 'admin'] as const) {
      expect(docs[kind].openapi).toBe('3.1.0');
      const ids = Object.values(docs[kind].paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
      expect(ids.filter((x, i) => ids.indexOf(x) !== i)).toEqual([]);
    }
    const create = docs.admin.paths['/admin/clients']?.post as unknown as {
      requestBody: { content: Record<string, { schema: { properties: Record<string, unknown> } }> };
    };
    expect(Object.keys(create.requestBody.content['application/json']?.schema.properties ?? {})).toContain(
      'redirect_uris',
    );
    const token = docs.public.paths['/oauth2/token']?.post as unknown as { requestBody: { content: object } };
    expect(Object.keys(token.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
  });

  it('document every route registered on each listener', () => {
    const tables = listenerTables(t.container);
    let count = 0;
    for (const kind of ['public', 'admin'] as const) {
      // The operator console's pages are outside the document.
      for (const route of tables[kind].routes.filter((r) => r.tag !== 'console')) {
        for (const m of route.method === 'all' ? METHODS : [route.method]) {
          const path = openApiPath(route.path);
          expect(docs[kind].paths[path]?.[m], `${kind} ${m.toUpperCase()} ${path}`).toBeDefined();
          count++;
        }
      }
    }
    expect(count).toBeGreaterThan(80);
  });

  it('the route table names the handler of every route and mounting refuses drift', async () => {
    const { mountOAuth2Routes } = await import('../../../src/oauth2/routes.ts');
    const fresh = () => ({
      public: new RouteTable().group({ access: 'public' }),
      admin: new RouteTable().group({ access: 'admin' }),
    });
    const routers = fresh();
    const noop = async () => {};
    const all = Object.fromEntries(OAUTH2_ROUTES.map((r) => [r.handler ?? r.operationId, noop]));
    expect(() => mountOAuth2Routes(routers, all)).not.toThrow();
    const { oauth2TokenExchange: _gone, ...missing } = all;
    expect(() => mountOAuth2Routes(fresh(), missing)).toThrow(/no handler 'oauth2TokenExchange'/);
    expect(() => mountOAuth2Routes(fresh(), { ...all, strayHandler: noop })).toThrow(/without a route: strayHandler/);
  });

  it('resolve every @ory/hydra-client operation to a registered, documented route with the same method', () => {
    const ops = sdkOperations();
    expect(ops.length).toBeGreaterThanOrEqual(50);
    const tables = listenerTables(t.container);
    const limits = { default: 1024, scim: 1024, admin: 1024 };
    const pass = () => async (_ctx: unknown, next: () => Promise<void>) => next();
    const routers = {
      public: listenerRoutes(tables.public.routes, {
        guards: tables.public.guards,
        bodyLimits: limits,
        failedAuth: pass,
      }),
      admin: listenerRoutes(tables.admin.routes, { guards: tables.admin.guards, bodyLimits: limits, failedAuth: pass }),
    };
    for (const { op, method, path } of ops) {
      const listeners: Array<'public' | 'admin'> = path.startsWith('/admin/')
        ? ['admin']
        : ['/health/alive', '/health/ready', '/version'].includes(path)
          ? ['public', 'admin']
          : ['public'];
      for (const kind of listeners) {
        // The admin listener serves Hydra's un-prefixed admin paths under /admin.
        const served = kind === 'admin' && !path.startsWith('/admin/') ? `/admin${path}` : path;
        const concrete = served.replace(/\{[^}]+\}/g, 'x');
        const matched = routers[kind].match(concrete, method) !== undefined;
        expect(matched, `${op}: ${method} ${served} on the ${kind} listener`).toBe(true);
        const documented = docs[kind].paths[served]?.[method.toLowerCase()];
        expect(documented?.operationId, `${op} documented at ${method} ${served}`).toBe(op);
      }
    }
  });
});
