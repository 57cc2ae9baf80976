/** Builds the public and admin apps from the container and the domains, and serves them. */
import type Koa from 'koa';
import { consoleRoutes } from './console/index.ts';
import { type Container, readiness } from './container.ts';
import { auditRoutes } from './core/audit/routes.ts';
import {
  type AdminAuthOptions,
  type AdminCredentials,
  type AdminFamily,
  adminCredentials,
  adminGuard,
} from './core/http/admin-auth.ts';
import { createApp, type Listening, listen } from './core/http/apps.ts';
import { createFailureCounter, failedAuthLimiter } from './core/http/auth-failures.ts';
import { healthRoutes, metricsRoutes } from './core/http/health.ts';
import { declaredDocs, openApiDocument, type RouteDoc } from './core/http/openapi.ts';
import { type DeclaredRoute, type Guard, RouteTable } from './core/http/routes.ts';
import { type ListenerName, listenerTls, loadTlsMaterial } from './core/http/tls.ts';
import { jobRoutes } from './core/jobs/routes.ts';
import { jacksonHealthRoutes } from './dsync/index.ts';
import { clientCertificateRequest, DEFAULT_DEV_USERS } from './oauth2/index.ts';
import { VERSION } from './version.ts';

export interface Apps {
  public: Koa;
  admin: Koa;
}

/** Where each listener serves its OpenAPI document. */
export const OPENAPI_PATHS = { public: '/.well-known/openapi.json', admin: '/admin/openapi.json' } as const;

/**
 * The admin API's access: open to whoever reaches the admin listener, as Hydra's (guard it at the
 * network), unless `serve.admin.auth.enabled` asks for an API key or an admin access token
 * (core/http/admin-auth.ts); the tokens are checked by the OAuth 2.0 domain.
 */
export function adminGuardOf(c: Container): Guard {
  return adminGuard(adminAuthOf(c));
}

/** `serve.admin.auth`, with the OAuth 2.0 domain's check of access tokens. */
function adminAuthOf(c: Container): AdminAuthOptions {
  const auth = c.config.serve.admin.auth;
  return { enabled: auth.enabled, apiKeys: auth.api_keys, tokens: auth.tokens ? c.oauth2.machineCaller : undefined };
}

/** The admin credentials other APIs take too (directory sync's v1 API); undefined while admin auth is off. */
const adminCredentialsOf = (c: Container): AdminCredentials | undefined => adminCredentials(adminAuthOf(c));

export interface ListenerTable {
  routes: DeclaredRoute[];
  guards: Record<string, Guard>;
}

/**
 * Every route of each listener with its policy, in matching order: health and metadata, the OAuth 2.0
 * domain (from its route table), directory sync, the development pages or the console, and last the
 * listener's OpenAPI document, which documents all of them but the console.
 */
export function listenerTables(c: Container): { public: ListenerTable; admin: ListenerTable } {
  const version = `v${VERSION}`;
  // The public listener hides readiness details (Hydra does the same).
  const publicReadiness = async () => Object.fromEntries(Object.keys(await readiness(c)).map((k) => [k, 'not ready']));
  const adminReadiness = () => readiness(c);
  // `dsync.api.listener`: where the v1 directory-sync API is served (Api-Key on each).
  const listener = c.config.dsync.api.listener;
  const v1 = {
    public: listener === 'public' || listener === 'both',
    admin: listener === 'admin' || listener === 'both',
  };

  const pub = new RouteTable();
  const pubMeta = pub.group({ access: 'public', tag: 'metadata' });
  healthRoutes(pubMeta, { version, readiness: publicReadiness });
  jacksonHealthRoutes(pubMeta, { version, readiness: adminReadiness });
  pub.routes.push(...c.oauth2.routes.public, ...c.dsync.routes.public, ...(v1.public ? c.dsync.routes.v1 : []));
  // The development login, consent and logout pages (`dev_ui.enabled`; none otherwise).
  pub.routes.push(...c.oauth2.routes.dev);

  const adm = new RouteTable();
  healthRoutes(adm.group({ access: 'public', prefix: '/admin', tag: 'metadata' }), {
    version,
    readiness: adminReadiness,
  });
  jacksonHealthRoutes(adm.group({ access: 'public', tag: 'metadata' }), { version, readiness: adminReadiness });
  metricsRoutes(adm.group({ access: 'admin', family: 'metadata', tag: 'metadata' }));
  auditRoutes(adm.group({ access: 'admin', family: 'audit', tag: 'audit' }), {
    db: c.db,
    config: c.config,
    now: () => c.clock.now(),
    types: c.auditTypes,
  });
  // Background jobs: on the queue's database (`queue.dsn`, else the data database), as the CLI's.
  jobRoutes(adm.group({ access: 'admin', family: 'jobs', body: ['json'], tag: 'jobs' }), { db: c.queue.db });
  adm.routes.push(...c.oauth2.routes.admin, ...(v1.admin ? c.dsync.routes.v1 : []));
  const documented = adm.routes.length;
  // The operator console (`console.enabled`): pages under /console, outside the OpenAPI document.
  const consoleGuards = c.config.console.enabled ? consoleRoutes(adm, c) : {};

  const docs = (
    kind: 'public' | 'admin',
    table: RouteTable,
    routes: readonly DeclaredRoute[],
    policy: { access: string; family?: AdminFamily },
  ) => {
    const self: RouteDoc = {
      method: 'get',
      path: OPENAPI_PATHS[kind],
      operationId: kind === 'public' ? 'getPublicOpenApiDocument' : 'getAdminOpenApiDocument',
      tags: ['metadata'],
      summary: 'This OpenAPI document.',
      responses: { 200: { description: 'OpenAPI 3.1 document.' } },
    };
    const fromTable = new Set(c.oauth2.routeDocs[kind].map((r) => `${r.method} ${r.path}`));
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
        ...c.oauth2.routeDocs[kind],
        ...declaredDocs(routes.filter((r) => !fromTable.has(`${r.method} ${r.path}`))),
        self,
      ],
    );
    table.group({ ...policy, tag: 'metadata' }).get(OPENAPI_PATHS[kind], function getOpenApiDocument(ctx) {
      ctx.body = doc;
    });
  };
  docs('public', pub, [...pub.routes], { access: 'public' });
  docs('admin', adm, adm.routes.slice(0, documented), { access: 'admin', family: 'metadata' });
  const guards = { ...c.oauth2.guards, ...c.dsync.guards(adminCredentialsOf(c)), admin: adminGuardOf(c) };
  return {
    public: { routes: pub.routes, guards },
    admin: { routes: adm.routes, guards: { ...guards, ...consoleGuards } },
  };
}

export function buildApps(c: Container): Apps {
  const tables = listenerTables(c);
  const limits = c.config.serve.limits;
  const fa = c.config.rate_limit.failed_auth;
  const failedAuth = {
    enabled: fa.enabled,
    window: fa.window,
    perCredential: fa.per_credential,
    perAddress: fa.per_address,
  };
  const limiter = failedAuthLimiter(createFailureCounter(c.db, c.clock, failedAuth, c.changes), failedAuth);
  const v1Public = ['public', 'both'].includes(c.config.dsync.api.listener);
  // Each domain registers its error renderers and their path prefixes; the core renders through them.
  const families = [c.oauth2.errorFamilies, c.dsync.errorFamilies];
  const errorRenderers = Object.assign({}, ...families.map((f) => f.renderers));
  const common = {
    log: c.log,
    errorRenderers,
    urlLimit: limits.url,
    exposeDebug: c.config.oauth2.expose_internal_errors,
    disableHealthLog: c.config.serve.request_log.disable_for_health,
    failedAuth: limiter,
    // Limits by the names routes use: SCIM bodies have their own; the v1 API keeps the admin
    // listener's limit wherever it is served.
    bodyLimits: { scim: limits.body.scim, admin: limits.body.admin },
  };
  return {
    public: createApp({
      ...common,
      kind: 'public',
      bodyLimits: { ...common.bodyLimits, default: limits.body.public },
      cors: c.config.serve.public.cors,
      perClientCors: c.oauth2.cors,
      prepared: c.oauth2.preparedRoutes,
      routes: tables.public.routes,
      guards: tables.public.guards,
      errorFamilies: [
        ...c.oauth2.errorFamilies.public,
        ...c.dsync.errorFamilies.public,
        ...(v1Public ? c.dsync.errorFamilies.admin : []),
      ],
    }),
    admin: createApp({
      ...common,
      kind: 'admin',
      bodyLimits: { ...common.bodyLimits, default: limits.body.admin },
      cors: c.config.serve.admin.cors,
      routes: tables.admin.routes,
      guards: tables.admin.guards,
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
  const clientCertificates = clientCertificateRequest(c.config);
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
        {
          maxHeaderSize: c.config.serve.limits.headers,
          // RFC 8705: the public listener asks for client certificates (oauth2.mtls).
          ...(name === 'public' && clientCertificates ? { clientCertificates } : {}),
        },
      );
    }
  } catch (e) {
    // The admin port taken (EADDRINUSE): the public listener opened first does not stay behind.
    await out.close(0);
    throw e;
  }
  return out;
}
