/**
 * Tracing with the OpenTelemetry API. The code only ever uses `@opentelemetry/api`: without a
 * registered SDK every span is a no-op. `startTracing` registers the SDK (tracer provider, an
 * AsyncLocalStorage context manager, the W3C trace-context propagator) and, for
 * `tracing.provider: otel`, the OTLP/HTTP exporter; those packages are imported only then.
 *
 * What is traced: a server span per HTTP request (route template, method, status), a child span per
 * SQL statement run through kysely, a client span per outbound request (safe-fetch), and a span per
 * job run whose parent is the request that enqueued it (the W3C `traceparent` rides in the job
 * payload under `_trace`), so a SCIM write and its webhook delivery are one trace.
 */
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

export const tracer = trace.getTracer('gatehouse');

/** The key under which a job payload carries its trace context. */
export const TRACE_KEY = '_trace';

export interface TracingConfig {
  provider: string;
  service_name: string;
  providers: { otlp: { server_url: string; insecure: boolean; sampling: { sampling_ratio: number } } };
}

export interface TracingHandle {
  shutdown(): Promise<void>;
}

let active: TracingHandle | undefined;

/**
 * Registers the SDK. With `exporter` (tests: an in-memory exporter) spans go there; otherwise
 * `tracing.provider: otel` sends them to `tracing.providers.otlp.server_url` (OTLP over HTTP, path
 * `/v1/traces`). Returns undefined when tracing is off. Idempotent per process.
 */
export async function startTracing(
  cfg: TracingConfig,
  opts: { exporter?: SpanExporter; version?: string } = {},
): Promise<TracingHandle | undefined> {
  if (active) return active;
  if (!opts.exporter && cfg.provider !== 'otel') return undefined;
  const sdk = await import('@opentelemetry/sdk-trace');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { resourceFromAttributes } = await import('@opentelemetry/resources');
  let exporter = opts.exporter;
  if (!exporter) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    const o = cfg.providers.otlp;
    const base = /^[a-z][a-z0-9+.-]*:\/\//i.test(o.server_url)
      ? o.server_url
      : `${o.insecure ? 'http' : 'https'}://${o.server_url || 'localhost:4318'}`;
    exporter = new OTLPTraceExporter({ url: `${base.replace(/\/+$/, '')}/v1/traces` });
  }
  const ratio = cfg.providers.otlp.sampling.sampling_ratio;
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({
      'service.name': cfg.service_name,
      ...(opts.version ? { 'service.version': opts.version } : {}),
    }),
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio) }),
    spanProcessors: [
      opts.exporter ? new sdk.SimpleSpanProcessor({ exporter }) : new sdk.BatchSpanProcessor({ exporter }),
    ],
  });
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const handle: TracingHandle = {
    /** Flushes what is buffered: at most 3 s, so an unreachable collector never holds up an exit. */
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the collector did not answer within 3 s')), 3_000);
        timer.unref();
      });
      try {
        await Promise.race([provider.shutdown(), late]);
      } finally {
        clearTimeout(timer);
        trace.disable();
        context.disable();
        propagation.disable();
        if (active === handle) active = undefined;
      }
    },
  };
  active = handle;
  return handle;
}

/** Whether `startTracing` registered the SDK: without it every span is a no-op, so callers may skip them. */
export const tracingActive = (): boolean => active !== undefined;

const headerGetter = {
  keys: (h: Record<string, unknown>) => Object.keys(h),
  get: (h: Record<string, unknown>, key: string) => {
    const v = h[key];
    return Array.isArray(v) ? v.map(String) : typeof v === 'string' ? v : undefined;
  },
};

/** The parent context of an incoming request (its `traceparent` header), or the root context. */
export function contextFromHeaders(headers: Record<string, unknown>): Context {
  return propagation.extract(ROOT_CONTEXT, headers, headerGetter);
}

/** The active trace context as a small carrier for a job payload, or undefined when nothing is traced. */
export function traceCarrier(): Record<string, string> | undefined {
  if (!trace.getSpan(context.active())?.spanContext().traceId) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** Adds the active trace context to a job payload (plain objects only; anything else is unchanged). */
export function withTraceContext(payload: unknown): unknown {
  const carrier = traceCarrier();
  if (!carrier || payload === null || typeof payload !== 'object' || Array.isArray(payload)) return payload;
  return { ...(payload as Record<string, unknown>), [TRACE_KEY]: carrier };
}

/** Splits a job payload into its own fields and the context it was enqueued in. */
export function takeTraceContext(payload: unknown): { payload: unknown; parent: Context } {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || !(TRACE_KEY in payload))
    return { payload, parent: context.active() };
  const { [TRACE_KEY]: carrier, ...rest } = payload as Record<string, unknown>;
  const parent =
    carrier && typeof carrier === 'object'
      ? propagation.extract(ROOT_CONTEXT, carrier as Record<string, unknown>, headerGetter)
      : context.active();
  return { payload: rest, parent };
}

/** Runs `fn` in a new active span, ending it (with error status on a throw) when `fn` settles. */
export function inSpan<T>(
  name: string,
  o: { kind?: SpanKind; attributes?: Record<string, string | number | boolean>; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(
    name,
    { kind: o.kind ?? SpanKind.INTERNAL, ...(o.attributes ? { attributes: o.attributes } : {}) },
    o.parent ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : 'error' });
        throw e;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * A statement's text as a span shows it: every string literal ('…', E'…', with their escapes)
 * replaced by `?`, as OpenTelemetry's database conventions ask of `db.query.text` ("sanitized"),
 * and cut at 2,000 characters. Quoted identifiers and comments are kept as they are; a literal left
 * open at the end (a text cut short by the caller) is replaced too.
 */
export function queryTextOf(sqlText: string): string {
  const cut = (t: string) => (t.length > 2000 ? `${t.slice(0, 2000)}…` : t);
  // Most statements (kysely's, with $n parameters) hold no literal: nothing to scan.
  if (!sqlText.includes("'")) return cut(sqlText);
  let out = '';
  let i = 0;
  const n = sqlText.length;
  // What is shown is cut at 2,000 characters: the scan stops once past them.
  while (i < n && out.length <= 2000) {
    const c = sqlText[i];
    if (c === '"') {
      // A quoted identifier: up to its closing quote ("" inside it is one quote).
      let j = i + 1;
      while (j < n && !(sqlText[j] === '"' && sqlText[j + 1] !== '"')) j += sqlText[j] === '"' ? 2 : 1;
      out += sqlText.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if ((c === '-' && sqlText[i + 1] === '-') || (c === '/' && sqlText[i + 1] === '*')) {
      // A comment, kept (an apostrophe in it opens no literal).
      const end = c === '-' ? sqlText.indexOf('\n', i) : sqlText.indexOf('*/', i + 2);
      const j = end < 0 ? n : c === '-' ? end : end + 2;
      out += sqlText.slice(i, j);
      i = j;
      continue;
    }
    const escaped = (c === 'E' || c === 'e') && sqlText[i + 1] === "'" && !/[\w$]/.test(sqlText[i - 1] ?? '');
    if (c === "'" || escaped) {
      let j = i + (escaped ? 2 : 1);
      for (; j < n; j++) {
        if (escaped && sqlText[j] === '\\') j++;
        else if (sqlText[j] === "'") {
          if (sqlText[j + 1] === "'") j++;
          else break;
        }
      }
      out += '?';
      i = j + 1;
      continue;
    }
    out += c;
    i++;
  }
  return cut(out);
}

/** A finished SQL statement as a child span of the active one (kysely reports after the fact). */
export function recordDbSpan(sqlText: string, durationMs: number, failed: boolean): void {
  const parent = trace.getSpan(context.active());
  if (!parent?.isRecording()) return;
  const end = Date.now();
  const span = tracer.startSpan(
    'db.query',
    {
      kind: SpanKind.CLIENT,
      startTime: end - durationMs,
      attributes: {
        'db.system.name': 'postgresql',
        // Statement text only: values are bound parameters ($1 …), and the literals a statement
        // carries (the directory writes' statements on CockroachDB) are replaced by `?`.
        'db.query.text': queryTextOf(sqlText),
        'db.operation.name': (/^\s*(\w+)/.exec(sqlText)?.[1] ?? '').toUpperCase(),
      },
    },
    context.active(),
  );
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(end);
}

export { SpanKind, SpanStatusCode, trace as otelTrace };
