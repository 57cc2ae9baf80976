/**
 * Every Prometheus metric gatehouse exports, defined once here (prom-client). Call sites record with
 * one line (`metrics.tokensIssued.inc({ grant, format })`). Label values are bounded sets (route
 * templates, grant types, outcomes, task names): never a client id, subject, directory id or
 * anything a caller chooses freely.
 *
 * The registry is per process: the admin listener serves it at `/admin/metrics/prometheus` (Hydra's
 * path) and a worker serves its own on `worker.metrics.port` (metricsServer below).
 */
import { createServer, type Server } from 'node:http';
import type pg from 'pg';
import client from 'prom-client';
import { JOB_COUNTS_SQL } from '../jobs/admin.ts';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

const SECONDS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const httpRequests = new client.Counter({
  name: 'gatehouse_http_requests_total',
  help: 'HTTP requests by listener, route template, method and status code.',
  labelNames: ['listener', 'route', 'method', 'status'] as const,
  registers: [registry],
});
const httpDuration = new client.Histogram({
  name: 'gatehouse_http_request_duration_seconds',
  help: 'HTTP request latency by listener, route template, method and status code.',
  labelNames: ['listener', 'route', 'method', 'status'] as const,
  buckets: SECONDS,
  registers: [registry],
});

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

let recording = true;

/** Records one finished request. `route` is the matched route template, or undefined (no route matched). */
export function observeHttp(listener: string, route: string | undefined, method: string, status: number, ms: number) {
  if (!recording) return;
  const labels = {
    listener,
    route: route ?? 'unmatched',
    method: METHODS.has(method) ? method : 'OTHER',
    status: String(status),
  };
  httpRequests.inc(labels);
  httpDuration.observe(labels, ms / 1000);
}

export const metrics = {
  /** Tokens the token endpoint issued, by grant type and access-token format (opaque, jwt). */
  tokensIssued: new client.Counter({
    name: 'gatehouse_oauth2_tokens_issued_total',
    help: 'Token responses issued by the token endpoint, by grant type and access token format.',
    labelNames: ['grant', 'format'] as const,
    registers: [registry],
  }),
  clientAuthFailures: new client.Counter({
    name: 'gatehouse_oauth2_client_authentication_failures_total',
    help: 'Failed client authentications at the token endpoint, by the method the request used.',
    labelNames: ['method'] as const,
    registers: [registry],
  }),
  refreshReuse: new client.Counter({
    name: 'gatehouse_oauth2_refresh_token_reuse_total',
    help: 'Refresh tokens presented again after rotation (the grant is revoked).',
    registers: [registry],
  }),
  scimOperations: new client.Counter({
    name: 'gatehouse_scim_operations_total',
    help: 'SCIM requests by directory type, resource, operation and outcome.',
    labelNames: ['directory_type', 'resource', 'operation', 'outcome'] as const,
    registers: [registry],
  }),
  webhookDeliveries: new client.Counter({
    name: 'gatehouse_webhook_deliveries_total',
    help: 'Webhook POST attempts by outcome (delivered, failed).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  webhookRetries: new client.Counter({
    name: 'gatehouse_webhook_retries_total',
    help: 'Webhook delivery job runs that were retries (attempt > 1).',
    registers: [registry],
  }),
  webhookFailedPermanently: new client.Counter({
    name: 'gatehouse_webhook_failed_permanently_total',
    help: 'Webhook delivery jobs that used up their attempts.',
    registers: [registry],
  }),
  webhookLatency: new client.Histogram({
    name: 'gatehouse_webhook_commit_to_receipt_seconds',
    help: 'Time from the commit of a directory change to the receiver accepting its webhook event.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600],
    registers: [registry],
  }),
  dbQueryDuration: new client.Histogram({
    name: 'gatehouse_db_query_duration_seconds',
    help: 'Latency of SQL statements run through the query builder, by outcome (ok, error).',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [registry],
  }),
  auditEvents: new client.Counter({
    name: 'gatehouse_audit_events_total',
    help: 'Audit events recorded, by type.',
    labelNames: ['type'] as const,
    registers: [registry],
  }),
};

const instruments = { ...metrics };
const NOOP = { inc() {}, observe() {} };

/**
 * Per process, from `metrics.enabled`: off turns every recording hook into a no-op (the endpoint then
 * shows process, pool and job metrics only). For measuring what the hooks cost, and for operators
 * who do not scrape.
 */
export function configureMetrics(o: { enabled: boolean }): void {
  recording = o.enabled;
  for (const k of Object.keys(instruments) as Array<keyof typeof metrics>)
    (metrics as Record<string, unknown>)[k] = o.enabled ? instruments[k] : NOOP;
}

// Database pools of this process (a process normally has one).
const pools = new Set<pg.Pool>();
const poolGauge = (name: string, help: string, read: (p: pg.Pool) => number) =>
  new client.Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      let n = 0;
      for (const p of pools) n += read(p);
      this.set(n);
    },
  });
poolGauge('gatehouse_db_pool_connections', 'Open database connections (idle and in use).', (p) => p.totalCount);
poolGauge('gatehouse_db_pool_idle_connections', 'Idle database connections.', (p) => p.idleCount);
poolGauge(
  'gatehouse_db_pool_waiting_clients',
  'Queries waiting for a free database connection.',
  (p) => p.waitingCount,
);
poolGauge(
  'gatehouse_db_pool_max_connections',
  'Configured maximum of database connections.',
  (p) => p.options.max ?? 10,
);

/** Counts this pool in the pool gauges until the returned function is called. */
export function observePool(pool: pg.Pool): () => void {
  pools.add(pool);
  return () => pools.delete(pool);
}

// Jobs by task and state, from graphile-worker's public view: one query per scrape at most every
// JOBS_CACHE_MS, whatever the number of scrapers.
const JOBS_CACHE_MS = 5_000;
let jobsPool: pg.Pool | undefined;
let jobsCache: { at: number; rows: Array<{ task: string; state: string; n: number }> } | undefined;
let jobsInFlight: Promise<void> | undefined;

async function refreshJobs(): Promise<void> {
  const pool = jobsPool;
  if (!pool) return;
  if (jobsCache && Date.now() - jobsCache.at < JOBS_CACHE_MS) return;
  jobsInFlight ??= pool
    .query<{ task: string; state: string; n: number }>(JOB_COUNTS_SQL)
    .then((r) => {
      jobsCache = { at: Date.now(), rows: r.rows };
    })
    .catch(() => {
      jobsCache = { at: Date.now(), rows: jobsCache?.rows ?? [] }; // keep the last numbers; try again later
    })
    .finally(() => {
      jobsInFlight = undefined;
    });
  await jobsInFlight;
}

const jobsGauge = new client.Gauge({
  name: 'gatehouse_jobs',
  help: 'Background jobs by task and state (waiting, scheduled, running, failed); completed jobs are deleted.',
  labelNames: ['task', 'state'] as const,
  registers: [registry],
  async collect() {
    await refreshJobs();
    this.reset();
    for (const r of jobsCache?.rows ?? []) this.set({ task: r.task, state: r.state }, r.n);
  },
});
void jobsGauge;

/** The pool the job gauge reads with (the process's main pool). */
export function observeJobs(pool: pg.Pool): () => void {
  jobsPool = pool;
  jobsCache = undefined;
  return () => {
    if (jobsPool === pool) jobsPool = undefined;
  };
}

export const PROMETHEUS_CONTENT_TYPE = registry.contentType;

export function renderMetrics(): Promise<string> {
  return registry.metrics();
}

/** A bare HTTP server answering `GET /metrics/prometheus` (and `/admin/metrics/prometheus`) for a worker process. */
export function metricsServer(
  port: number,
  host: string,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && (path === '/metrics/prometheus' || path === '/admin/metrics/prometheus')) {
      renderMetrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
          res.end(body);
        },
        () => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('metrics could not be collected\n');
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: host || undefined }, () => {
      const a = server.address();
      resolve({
        server,
        port: typeof a === 'object' && a ? a.port : port,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

// With a separate queue database (`queue.dsn`): the job outbox's backlog in the data database, the
// relay's work left. Read like the job gauge: one query per JOBS_CACHE_MS at most.
let outboxPool: pg.Pool | undefined;
let outboxCache: { at: number; jobs: number; oldest: number } | undefined;
let outboxInFlight: Promise<void> | undefined;

async function refreshOutbox(): Promise<void> {
  const pool = outboxPool;
  if (!pool) return;
  if (outboxCache && Date.now() - outboxCache.at < JOBS_CACHE_MS) return;
  outboxInFlight ??= pool
    .query<{ n: number; age: number | null }>(
      'select count(*)::int as n, extract(epoch from now() - min(created_at))::float8 as age from gatehouse_job_outbox',
    )
    .then((r) => {
      outboxCache = { at: Date.now(), jobs: r.rows[0]?.n ?? 0, oldest: r.rows[0]?.age ?? 0 };
    })
    .catch(() => {
      outboxCache = { at: Date.now(), jobs: outboxCache?.jobs ?? 0, oldest: outboxCache?.oldest ?? 0 };
    })
    .finally(() => {
      outboxInFlight = undefined;
    });
  await outboxInFlight;
}

const outboxJobsGauge = new client.Gauge({
  name: 'gatehouse_job_outbox_jobs',
  help: 'With queue.dsn: jobs committed in the data database that the relay has not moved into the queue yet.',
  registers: [registry],
  async collect() {
    if (!outboxPool) return;
    await refreshOutbox();
    this.set(outboxCache?.jobs ?? 0);
  },
});
void outboxJobsGauge;

const outboxAgeGauge = new client.Gauge({
  name: 'gatehouse_job_outbox_oldest_seconds',
  help: 'With queue.dsn: age of the oldest job waiting in the outbox (0 when empty); grows while no relay runs.',
  registers: [registry],
  async collect() {
    if (!outboxPool) return;
    await refreshOutbox();
    this.set(outboxCache?.oldest ?? 0);
  },
});
void outboxAgeGauge;

/** The data pool the outbox gauges read with (only with a separate queue database). */
export function observeOutbox(pool: pg.Pool): () => void {
  outboxPool = pool;
  outboxCache = undefined;
  return () => {
    if (outboxPool === pool) outboxPool = undefined;
  };
}
