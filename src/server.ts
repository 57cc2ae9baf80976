/** Builds the public and admin apps from the container and the domains, and serves them. */
import Router from '@koa/router';
import type Koa from 'koa';
import { consoleRouter } from './console/index.ts';
import { type Container, readiness } from './container.ts';
import { auditRouter } from './core/audit/routes.ts';
import { DEFAULT_DEV_USERS } from './core/config/load.ts';
import { createApp, type Listening, listen } from './core/http/apps.ts';
import { createFailureCounter, failedAuthLimiter } from './core/http/auth-failures.ts';
import { healthRouter, jacksonHealthRouter, metricsRouter } from './core/http/health.ts';
import { openApiDocument, type RouteDoc, routerDocs } from './core/http/openapi.ts';
import { type ListenerName, listenerTls, loadTlsMaterial } from './core/http/tls.ts';
import { scimFailedAuthTarget } from './dsync/scim/handlers.ts';
import { devUiRouter } from './oauth2/dev-ui.ts';
import { oauth2FailedAuthTarget } from './oauth2/failed-auth.ts';
import { OAUTH2_ROUTES } from './oauth2/routes.ts';
import { VERSION } from './version.ts';

export interface Apps {
  public: Koa;
  admin: Koa;
}

/** Where each listener serves its OpenAPI document. */
export const OPENAPI_PATHS = { public: '/.well-known/openapi.json', admin: '/admin/openapi.json' } as const;

/**
 * The routers of each listener, in mounting order: health and metadata, the OAuth 2.0 domain (from
 * its route table), directory sync, and last the listener's OpenAPI document, which documents all
 * of them (the OAuth 2.0 routes from the table, the others from their routers).
 */
export function listenerRouters(c: Container): { public: Router[]; admin: Router[] } {
  const version = `v${VERSION}`;
  // The public listener hides readiness details (Hydra does the same).
  const publicHealth = healthRouter({
    version,
    readiness: async () => Object.fromEntries(Object.keys(await readiness(c)).map((k) => [k, 'not ready'])),
  });
  const adminHealth = healthRouter({ version, readiness: () => readiness(c) }, '/admin');
  const jacksonHealth = jacksonHealthRouter({ version, readiness: () => readiness(c) });
  // `dsync.api.listener`: where the v1 directory-sync API is served (Api-Key on each).
  const listener = c.config.dsync.api.listener;
  const v1Public = listener === 'public' || listener === 'both' ? [c.dsync.adminRouter] : [];
  const v1Admin = listener === 'admin' || listener === 'both' ? [c.dsync.adminRouter] : [];
  const others = {
    public: [
      { router: publicHealth, tag: 'metadata' },
      { router: jacksonHealth, tag: 'metadata' },
      { router: c.dsync.publicRouter, tag: 'dsync' },
      ...v1Public.map((router) => ({ router, tag: 'dsync' })),
    ],
    admin: [
      { router: adminHealth, tag: 'metadata' },
      { router: jacksonHealth, tag: 'metadata' },
      { router: metricsRouter(), tag: 'metadata' },
      { router: auditRouter({ db: c.db, config: c.config, now: () => c.clock.now() }), tag: 'audit' },
      ...v1Admin.map((router) => ({ router, tag: 'dsync' })),
    ],
  };
  const docs = (kind: 'public' | 'admin') => {
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
          kind === 'public' ? ', SCIM 2.0' : ''
        }, directory sync (BoxyHQ Jackson compatible).`,
        serverUrl: kind === 'public' ? c.config.urls.self.public : c.config.urls.self.admin,
      },
      [
        ...OAUTH2_ROUTES.filter((r) => r.listener === kind),
        ...others[kind].flatMap((o) => routerDocs(o.router, o.tag)),
        self,
      ],
    );
    const r = new Router();
    r.get(OPENAPI_PATHS[kind], function getOpenApiDocument(ctx) {
      ctx.body = doc;
    });
    return r;
  };
  const [pubHealth, jackson, scim, ...pubV1] = others.public.map((o) => o.router);
  const [admHealth, jackson2, metrics, audit, ...admV1] = others.admin.map((o) => o.router);
  return {
    public: [
      pubHealth,
      jackson,
      c.oauth2.publicRouter,
      scim,
      ...pubV1,
      // The development login, consent and logout pages (`dev_ui.enabled`); they call the admin API over HTTP.
      ...(c.config.dev_ui.enabled ? [devUiRouter({ config: c.config })] : []),
      docs('public'),
    ] as Router[],
    admin: [
      admHealth,
      jackson2,
      metrics,
      audit,
      c.oauth2.adminRouter,
      ...admV1,
      // The operator console (`console.enabled`): pages under /console, outside the OpenAPI document.
      ...(c.config.console.enabled ? [consoleRouter(c)] : []),
      docs('admin'),
    ] as Router[],
  };
}

export function buildApps(c: Container): Apps {
  const routers = listenerRouters(c);
  const limits = c.config.serve.limits;
  const v1Public = ['public', 'both'].includes(c.config.dsync.api.listener);
  const fa = c.config.rate_limit.failed_auth;
  const failedAuth = {
    enabled: fa.enabled,
    window: fa.window,
    perCredential: fa.per_credential,
    perAddress: fa.per_address,
  };
  // Each domain registers its error renderers and their path prefixes; the core renders through them.
  const families = [c.oauth2.errorFamilies, c.dsync.errorFamilies];
  const errorRenderers = Object.assign({}, ...families.map((f) => f.renderers));
  const common = {
    log: c.log,
    errorRenderers,
    urlLimit: limits.url,
    exposeDebug: c.config.oauth2.expose_internal_errors,
    disableHealthLog: c.config.serve.request_log.disable_for_health,
  };
  return {
    public: createApp({
      ...common,
      kind: 'public',
      bodyLimit: limits.body.public,
      middleware: [
        failedAuthLimiter(createFailureCounter(c.db, c.clock, failedAuth, c.changes), failedAuth, [
          oauth2FailedAuthTarget,
          scimFailedAuthTarget,
        ]),
      ],
      bodyLimits: [
        ...c.dsync.errorFamilies.public
          .filter((f) => f.family === 'scim')
          .map((f) => ({ prefix: f.prefix, limit: limits.body.scim })),
        // The v1 API keeps the admin listener's body limit when it is served here.
        ...(v1Public ? c.dsync.errorFamilies.admin.map((f) => ({ prefix: f.prefix, limit: limits.body.admin })) : []),
      ],
      cors: c.config.serve.public.cors,
      perClientCors: c.oauth2.cors,
      prepared: c.oauth2.preparedRoutes,
      routers: routers.public,
      errorFamilies: [
        ...c.oauth2.errorFamilies.public,
        ...c.dsync.errorFamilies.public,
        ...(v1Public ? c.dsync.errorFamilies.admin : []),
      ],
    }),
    admin: createApp({
      ...common,
      kind: 'admin',
      bodyLimit: limits.body.admin,
      cors: c.config.serve.admin.cors,
      routers: routers.admin,
      errorFamilies: [...c.oauth2.errorFamilies.admin, ...c.dsync.errorFamilies.admin],
    }),
  };
}

export interface Serving {
  public?: Listening;
  admin?: Listening;
  close(graceMs?: number): Promise<void>;
  /**
   * Re-reads the TLS certificates and keys of the listeners that use them (SIGHUP). A listener whose
   * new pair cannot be loaded keeps its current one; the answer lists one line per listener.
   */
  reloadTls(): { listener: ListenerName; ok: boolean; message: string }[];
}

export async function serve(
  c: Container,
  which: 'all' | 'public' | 'admin',
  ports?: { public?: number; admin?: number; host?: string },
): Promise<Serving> {
  const apps = buildApps(c);
  if (c.config.dev_ui.enabled && which !== 'admin') {
    const users = (c.config.dev_ui.users ?? []).map((u) => u.subject).join(', ');
    c.log.warn(
      `DEVELOPMENT LOGIN APP IS ON: ${c.config.urls.login} signs anyone in as a test user (${users}${
        c.config.dev_ui.users === DEFAULT_DEV_USERS ? `, password ${DEFAULT_DEV_USERS[0]?.password}` : ''
      }); never use it in production (dev_ui.enabled)`,
    );
  }
  const tls = {
    public: which === 'admin' ? undefined : listenerTls(c.config, 'public'),
    admin: which === 'public' ? undefined : listenerTls(c.config, 'admin'),
  };
  // Both pairs are loaded before either listener opens: a bad one stops the start cleanly.
  const material = {
    public: tls.public && loadTlsMaterial(tls.public),
    admin: tls.admin && loadTlsMaterial(tls.admin),
  };
  const out: Serving = {
    async close(graceMs?: number) {
      await Promise.all([out.public?.close(graceMs), out.admin?.close(graceMs)]);
    },
    reloadTls() {
      const results: { listener: ListenerName; ok: boolean; message: string }[] = [];
      for (const name of ['public', 'admin'] as const) {
        const settings = tls[name];
        const l = out[name];
        if (!settings || !l?.setTls) continue;
        try {
          l.setTls(loadTlsMaterial(settings));
          results.push({ listener: name, ok: true, message: 'certificate reloaded' });
        } catch (e) {
          results.push({ listener: name, ok: false, message: (e as Error).message });
        }
      }
      return results;
    },
  };
  try {
    for (const name of which === 'all' ? (['public', 'admin'] as const) : [which]) {
      out[name] = await listen(
        apps[name],
        ports?.[name] ?? c.config.serve[name].port,
        ports?.host ?? c.config.serve[name].host,
        material[name],
        { maxHeaderSize: c.config.serve.limits.headers },
      );
    }
  } catch (e) {
    // The admin port taken (EADDRINUSE): the public listener opened first does not stay behind.
    await out.close(0);
    throw e;
  }
  return out;
}
