/** Builds the public and admin apps from the container and the domains, and serves them. */
import Router from '@koa/router';
import type Koa from 'koa';
import { type Container, readiness } from './container.ts';
import { createApp, type Listening, listen } from './core/http/apps.ts';
import { healthRouter } from './core/http/health.ts';
import { openApiDocument, type RouteDoc, routerDocs } from './core/http/openapi.ts';
import { OAUTH2_ROUTES } from './oauth2/routes.ts';
import { VERSION } from './version.ts';

export interface Apps {
  public: Koa;
  admin: Koa;
}

/** Where each listener serves its OpenAPI document. */
export const OPENAPI_PATHS = { public: '/.well-known/openapi.json', admin: '/admin/openapi.json' } as const;

/**
 * The routers of each listener, in mounting order: health, the OAuth 2.0 domain (from its route
 * table), directory sync, and the OpenAPI document of the listener, which documents all of them.
 */
export function listenerRouters(c: Container): { public: Router[]; admin: Router[] } {
  const version = `v${VERSION}`;
  // The public listener hides readiness details (Hydra does the same).
  const publicHealth = healthRouter({
    version,
    readiness: async () => Object.fromEntries(Object.keys(await readiness(c)).map((k) => [k, 'not ready'])),
  });
  const adminHealth = healthRouter({ version, readiness: () => readiness(c) }, '/admin');
  const docs = (kind: 'public' | 'admin', health: Router, dsync: Router) => {
    const self: RouteDoc = {
      method: 'get',
      path: OPENAPI_PATHS[kind],
      operationId: kind === 'public' ? 'getPublicOpenApiDocument' : 'getAdminOpenApiDocument',
      tags: ['metadata'],
      summary: 'This OpenAPI document.',
      responses: { 200: { description: 'OpenAPI 3.1 document.' } },
    };
    const doc = openApiDocument(
      {
        title: `gatehouse ${kind} API`,
        version: VERSION,
        description: `The ${kind} listener: OAuth 2.0 / OpenID Connect (Ory Hydra 26 compatible)${
          kind === 'public' ? ', SCIM 2.0' : ', directory sync (BoxyHQ Jackson compatible)'
        }.`,
        serverUrl: kind === 'public' ? c.config.urls.self.public : c.config.urls.self.admin,
      },
      [
        ...routerDocs(health, 'metadata'),
        ...OAUTH2_ROUTES.filter((r) => r.listener === kind),
        ...routerDocs(dsync, 'dsync'),
        self,
      ],
    );
    const r = new Router();
    r.get(OPENAPI_PATHS[kind], function getOpenApiDocument(ctx) {
      ctx.body = doc;
    });
    return r;
  };
  return {
    public: [
      publicHealth,
      c.oauth2.publicRouter,
      c.dsync.publicRouter,
      docs('public', publicHealth, c.dsync.publicRouter),
    ],
    admin: [adminHealth, c.oauth2.adminRouter, c.dsync.adminRouter, docs('admin', adminHealth, c.dsync.adminRouter)],
  };
}

export function buildApps(c: Container): Apps {
  const routers = listenerRouters(c);
  const common = {
    log: c.log,
    exposeDebug: c.config.oauth2.expose_internal_errors,
    disableHealthLog: c.config.serve.request_log.disable_for_health,
  };
  return {
    public: createApp({
      ...common,
      kind: 'public',
      cors: c.config.serve.public.cors,
      perClientCors: c.oauth2.cors,
      routers: routers.public,
      errorFamilies: c.dsync.errorFamilies.public,
    }),
    admin: createApp({
      ...common,
      kind: 'admin',
      cors: c.config.serve.admin.cors,
      routers: routers.admin,
      errorFamilies: c.dsync.errorFamilies.admin,
    }),
  };
}

export interface Serving {
  public?: Listening;
  admin?: Listening;
  close(graceMs?: number): Promise<void>;
}

export async function serve(
  c: Container,
  which: 'all' | 'public' | 'admin',
  ports?: { public?: number; admin?: number; host?: string },
): Promise<Serving> {
  const apps = buildApps(c);
  const out: Serving = {
    async close(graceMs?: number) {
      await Promise.all([out.public?.close(graceMs), out.admin?.close(graceMs)]);
    },
  };
  if (which !== 'admin')
    out.public = await listen(
      apps.public,
      ports?.public ?? c.config.serve.public.port,
      ports?.host ?? c.config.serve.public.host,
    );
  if (which !== 'public')
    out.admin = await listen(
      apps.admin,
      ports?.admin ?? c.config.serve.admin.port,
      ports?.host ?? c.config.serve.admin.host,
    );
  return out;
}
