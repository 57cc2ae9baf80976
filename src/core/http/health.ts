/**
 * `/health/alive`, `/health/ready` and `/version`, on both listeners (Hydra: /admin/health/*), and
 * `/admin/metrics/prometheus` (Hydra's path) on the admin listener only.
 */
import { PROMETHEUS_CONTENT_TYPE, renderMetrics } from '../observability/metrics.ts';
import { UNAVAILABLE_RETRY_AFTER } from './errors.ts';
import type { Registrar } from './routes.ts';

export interface HealthDeps {
  version: string;
  /** Resolves to a map of failing checks (empty when ready). */
  readiness(): Promise<Record<string, string>>;
}

/** Registers the health routes on `r` (a public group; under `/admin` on the admin listener). */
export function healthRoutes(r: Registrar, deps: HealthDeps): void {
  // Handler names are Hydra's operation ids (they name the operations in the OpenAPI documents).
  r.get('/health/alive', function isAlive(ctx) {
    ctx.body = { status: 'ok' };
  });
  r.get('/health/ready', async function isReady(ctx) {
    const errors = await deps.readiness();
    if (Object.keys(errors).length) {
      ctx.status = 503;
      ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER));
      ctx.body = { errors };
      return;
    }
    ctx.body = { status: 'ok' };
  });
  r.get('/version', function getVersion(ctx) {
    ctx.body = { version: deps.version };
  });
}

/** Prometheus text exposition of this process's registry (src/core/observability/metrics.ts). */
export function metricsRoutes(r: Registrar): void {
  r.get('/admin/metrics/prometheus', async function getPrometheusMetrics(ctx) {
    const body = await renderMetrics();
    ctx.type = PROMETHEUS_CONTENT_TYPE;
    ctx.body = body;
  });
}
