/**
 * The process's Prometheus registry (prom-client) and the instruments call sites record with, one
 * line each (`metrics.auditEvents.inc({ type })`). The core defines its own (HTTP requests, SQL
 * statements, audit events, pools, jobs); every other family is a registry entry: a domain defines
 * its instruments with `counter`/`histogram` (src/<domain>/metrics.ts), adds their names to `Metrics`
 * by declaration merging, and the composition root registers the family (`registerMetrics`), which
 * puts its instruments in `metrics` and its metrics in the registry. Label values are bounded sets
 * (route templates, grant types, outcomes, task names): never a client id, subject, directory id
 * or anything a caller chooses freely.
 *
 * The admin listener serves the registry at `/admin/metrics/prometheus` (Hydra's path) and a worker
 * serves its own on `worker.metrics.port` (metricsServer below).
 */
import { createServer, type Server } from 'node:http';
import type pg from 'pg';
import client from 'prom-client';
import { JOB_COUNTS_SQL } from '../jobs/admin.ts';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

const SECONDS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Instrument = client.Counter<string> | client.Histogram<string>;
/** Instruments by the name call sites use (`metrics.<name>`). */
export type MetricFamily = Readonly<Record<string, Instrument>>;

/** A counter of a family, registered with the process's registry when its family is. */
export const counter = <L extends string = never>(o: { name: string; help: string; labelNames?: readonly L[] }) =>
  new client.Counter<L>({ ...o, registers: [] });

/** A histogram of a family, registered with the process's registry when its family is. */
export const histogram = <L extends string = never>(o: {
  name: string;
  help: string;
  labelNames?: readonly L[];
  buckets: number[];
}) => new client.Histogram<L>({ ...o, registers: [] });

const http = {
  requests: counter({
    name: 'gatehouse_http_requests_total',
    help: 'HTTP requests by listener, route template, method and status code.',
    labelNames: ['listener', 'route', 'method', 'status'] as const,
  }),
  duration: histogram({
    name: 'gatehouse_http_request_duration_seconds',
    help: 'HTTP request latency by listener, route template, method and status code.',
    labelNames: ['listener', 'route', 'method', 'status'] as const,
    buckets: SECONDS,
  }),
};

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Records one finished request. `route` is the matched route template, or undefined (no route matched). */
export function observeHttp(listener: string, route: string | undefined, method: string, status: number, ms: number) {
  const labels = {
    listener,
    route: route ?? 'unmatched',
    method: METHODS.has(method) ? method : 'OTHER',
    status: String(status),
  };
  http.requests.inc(labels);
  http.duration.observe(labels, ms / 1000);
}

const coreMetrics = {
  dbQueryDuration: histogram({
    name: 'gatehouse_db_query_duration_seconds',
    help: 'Latency of SQL statements run through the query builder, by outcome (ok, error).',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  }),
  auditEvents: counter({
    name: 'gatehouse_audit_events_total',
    help: 'Audit events recorded, by type.',
    labelNames: ['type'] as const,
  }),
};

/**
 * What call sites record with: the core's instruments, and those of every family the composition
 * root registered (each domain adds its names here by declaration merging).
 */
export interface Metrics extends Readonly<typeof coreMetrics> {}

export const metrics = {} as Metrics;

/** Each instrument where its call sites read it, so that `configureMetrics` can turn it off there. */
const slots: Array<{ holder: Record<string, unknown>; key: string; instrument: Instrument }> = [];
const registered = new Set<MetricFamily>();

function hold(holder: Record<string, unknown>, family: MetricFamily): void {
  for (const [key, instrument] of Object.entries(family)) {
    registry.registerMetric(instrument);
    holder[key] = instrument;
    slots.push({ holder, key, instrument });
  }
}
hold(http, http);
hold(metrics as unknown as Record<string, unknown>, coreMetrics);

/**
 * Registers the families of the faces (the composition root does, once per family): their metrics
 * are served from now on and their instruments are `metrics.<name>`. A family registered again is
 * left as it is.
 */
export function registerMetrics(...families: MetricFamily[]): void {
  for (const family of families) {
    if (registered.has(family)) continue;
    registered.add(family);
    hold(metrics as unknown as Record<string, unknown>, family);
  }
}

const NOOP = { inc() {}, observe() {} };

/**
 * Per process, from `metrics.enabled`: off turns every recording hook into a no-op (the endpoint then
 * shows process, pool and job metrics only). For measuring what the hooks cost, and for operators
 * who do not scrape.
 */
export function configureMetrics(o: { enabled: boolean }): void {
  for (const { holder, key, instrument } of slots) holder[key] = o.enabled ? instrument : NOOP;
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

// Jobs by task and state, from graphile-worker's public view, and with a separate queue database
// (`queue.dsn`) the job outbox's backlog in the data database: one query per CACHE_MS at most,
// whatever the number of scrapers. The pool observed last is read (a process normally has one).
const CACHE_MS = 5_000;

/** A read that runs at most once per CACHE_MS; a failed read keeps the last answer until the next try. */
function cachedRead<T>(read: () => Promise<T>, initial: T): () => Promise<T> {
  let value = initial;
  let at = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<void> | undefined;
  return async () => {
    if (Date.now() - at < CACHE_MS) return value;
    inFlight ??= read()
      .then((v) => {
        value = v;
      })
      .catch(() => {}) // keep the last numbers; try again later
      .finally(() => {
        at = Date.now();
        inFlight = undefined;
      });
    await inFlight;
    return value;
  };
}

/** Observes a source until the returned function is called; the gauges read the one observed last. */
function observe<T>(sources: T[], source: T): () => void {
  sources.push(source);
  return () => {
    const i = sources.lastIndexOf(source);
    if (i >= 0) sources.splice(i, 1);
  };
}

type JobCount = { task: string; state: string; n: number };
const jobSources: Array<() => Promise<JobCount[]>> = [];

new client.Gauge({
  name: 'gatehouse_jobs',
  help: 'Background jobs by task and state (waiting, scheduled, running, failed); completed jobs are deleted.',
  labelNames: ['task', 'state'] as const,
  registers: [registry],
  async collect() {
    const rows = (await jobSources.at(-1)?.()) ?? [];
    this.reset();
    for (const r of rows) this.set({ task: r.task, state: r.state }, r.n);
  },
});

/** The pool the job gauge reads with (the queue's). */
export function observeJobs(pool: pg.Pool): () => void {
  return observe(
    jobSources,
    cachedRead(async () => (await pool.query<JobCount>(JOB_COUNTS_SQL)).rows, []),
  );
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

type Outbox = { jobs: number; oldest: number };
const outboxSources: Array<() => Promise<Outbox>> = [];

new client.Gauge({
  name: 'gatehouse_job_outbox_jobs',
  help: 'With queue.dsn: jobs committed in the data database that the relay has not moved into the queue yet.',
  registers: [registry],
  async collect() {
    const read = outboxSources.at(-1);
    if (read) this.set((await read()).jobs);
  },
});

new client.Gauge({
  name: 'gatehouse_job_outbox_oldest_seconds',
  help: 'With queue.dsn: age of the oldest job waiting in the outbox (0 when empty); grows while no relay runs.',
  registers: [registry],
  async collect() {
    const read = outboxSources.at(-1);
    if (read) this.set((await read()).oldest);
  },
});

/** The data pool the outbox gauges read with (only with a separate queue database). */
export function observeOutbox(pool: pg.Pool): () => void {
  return observe(
    outboxSources,
    cachedRead(
      async () => {
        const r = await pool.query<{ n: number; age: number | null }>(
          'select count(*)::int as n, extract(epoch from now() - min(created_at))::float8 as age from gatehouse_job_outbox',
        );
        return { jobs: r.rows[0]?.n ?? 0, oldest: r.rows[0]?.age ?? 0 };
      },
      { jobs: 0, oldest: 0 },
    ),
  );
}
