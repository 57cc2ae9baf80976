/** Builds the public and admin apps from the container and the domains, and serves them. */
import type Koa from 'koa';
import { type Container, readiness } from './container.ts';
import { createApp, type Listening, listen } from './core/http/apps.ts';
import { auditRouter } from './core/audit/routes.ts';
import { healthRouter, jacksonHealthRouter, metricsRouter } from './core/http/health.ts';
import { type ListenerName, listenerTls, loadTlsMaterial } from './core/http/tls.ts';
import { VERSION } from './version.ts';

export interface Apps {
  public: Koa;
  admin: Koa;
}

export function buildApps(c: Container): Apps {
  const version = `v${VERSION}`;
  const limits = c.config.serve.limits;
  const common = {
    log: c.log,
    urlLimit: limits.url,
    exposeDebug: c.config.oauth2.expose_internal_errors,
    disableHealthLog: c.config.serve.request_log.disable_for_health,
  };
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
  return {
    public: createApp({
      ...common,
      kind: 'public',
      bodyLimit: limits.body.public,
      bodyLimits: c.dsync.errorFamilies.public
        .filter((f) => f.family === 'scim')
        .map((f) => ({ prefix: f.prefix, limit: limits.body.scim })),
      cors: c.config.serve.public.cors,
      perClientCors: c.oauth2.cors,
      routers: [publicHealth, jacksonHealth, c.oauth2.publicRouter, c.dsync.publicRouter, ...v1Public],
      errorFamilies: [...c.dsync.errorFamilies.public, ...(v1Public.length ? c.dsync.errorFamilies.admin : [])],
    }),
    admin: createApp({
      ...common,
      kind: 'admin',
      bodyLimit: limits.body.admin,
      cors: c.config.serve.admin.cors,
      routers: [
        adminHealth,
        jacksonHealth,
        metricsRouter(),
        auditRouter({ db: c.db, config: c.config, now: () => c.clock.now() }),
        c.oauth2.adminRouter,
        ...v1Admin,
      ],
      errorFamilies: c.dsync.errorFamilies.admin,
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
  if (which !== 'admin')
    out.public = await listen(
      apps.public,
      ports?.public ?? c.config.serve.public.port,
      ports?.host ?? c.config.serve.public.host,
      material.public,
      { maxHeaderSize: c.config.serve.limits.headers },
    );
  if (which !== 'public')
    out.admin = await listen(
      apps.admin,
      ports?.admin ?? c.config.serve.admin.port,
      ports?.host ?? c.config.serve.admin.host,
      material.admin,
      { maxHeaderSize: c.config.serve.limits.headers },
    );
  return out;
}
