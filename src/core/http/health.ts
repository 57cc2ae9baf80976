/** `/health/alive`, `/health/ready` and `/version`, on both listeners (Hydra: /admin/health/*). */
import Router from '@koa/router';
import { UNAVAILABLE_RETRY_AFTER } from './errors.ts';

export interface HealthDeps {
  version: string;
  /** Resolves to a map of failing checks (empty when ready). */
  readiness(): Promise<Record<string, string>>;
}

export function healthRouter(deps: HealthDeps, prefix = ''): Router {
  const r = new Router({ prefix });
  r.get('/health/alive', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  r.get('/health/ready', async (ctx) => {
    const errors = await deps.readiness();
    if (Object.keys(errors).length) {
      ctx.status = 503;
      ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER));
      ctx.body = { errors };
      return;
    }
    ctx.body = { status: 'ok' };
  });
  r.get('/version', (ctx) => {
    ctx.body = { version: deps.version };
  });
  return r;
}
