/**
 * OpenTelemetry traces, with the SDK registered on an in-memory exporter: a server span per request
 * named by its route template, SQL statements and outbound requests as child spans, audit events as
 * span events, an incoming `traceparent` continued, and a SCIM write and its webhook delivery job in
 * one trace (the trace context rides in the job payload).
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue } from '../../../src/core/jobs/enqueue.ts';
import {
  inSpan,
  otelTrace,
  startTracing,
  type TracingHandle,
  takeTraceContext,
} from '../../../src/core/observability/tracing.ts';
import { eventually, type TestServer } from '../../helpers/apps.ts';
import { createDirectory, scimClient, startDsyncServer } from '../../helpers/dsync.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { scimUser } from '../../helpers/webhooks.ts';

const exporter = new InMemorySpanExporter();
let tracing: TracingHandle | undefined;
let s: TestServer;
let rx: Receiver;

beforeAll(async () => {
  tracing = await startTracing(
    {
      provider: '',
      service_name: 'gatehouse-test',
      providers: { otlp: { server_url: '', insecure: true, sampling: { sampling_ratio: 1 } } },
    },
    { exporter },
  );
  rx = await startReceiver();
  s = await startDsyncServer({ 'audit.enabled': true });
  await s.startWorker({ concurrency: 2 });
});
afterAll(async () => {
  await s?.close();
  await rx?.close();
  await tracing?.shutdown();
});

const spans = () => exporter.getFinishedSpans();
const parentOf = (x: ReadableSpan) => x.parentSpanContext?.spanId;
const inTrace = (traceId: string) => spans().filter((x) => x.spanContext().traceId === traceId);

describe('tracing', () => {
  it('makes one trace of a SCIM write, its SQL, its audit event and its webhook delivery job', async () => {
    const d = await createDirectory(s, {
      tenant: 'trace',
      product: 'p',
      webhook_url: rx.url,
      webhook_secret: 'whsec-trace',
    });
    exporter.reset();
    const r = await scimClient(s, d)('POST', '/Users', scimUser('t1'));
    expect(r.status).toBe(201);
    await eventually(async () => rx.delivered().filter((x) => x.body?.directory_id === d.id).length === 1);
    const job = await eventually(async () => spans().find((x) => x.name === 'job webhook_deliver'));

    const server = spans().find((x) => x.name === 'POST /api/scim/v2.0/:directoryId/:resourceType');
    expect(server).toBeDefined();
    if (!server) return;
    const traceId = server.spanContext().traceId;
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/scim/v2.0/:directoryId/:resourceType',
      'http.response.status_code': 201,
      'gatehouse.listener': 'public',
    });
    // The audit event is an event of the request's span.
    const ev = server.events.find((e) => e.name === 'audit dsync.scim.change');
    expect(ev?.attributes).toMatchObject({ 'audit.actor.kind': 'directory', 'audit.actor.id': d.id });
    // SQL statements are children of the request span, with the statement text and never values.
    const db = inTrace(traceId).filter((x) => x.name === 'db.query' && parentOf(x) === server.spanContext().spanId);
    expect(db.length).toBeGreaterThan(3);
    // The write is one call of the generic apply function (its statements run inside it).
    expect(db.some((x) => /gatehouse_dsync_apply\(/.test(String(x.attributes['db.query.text'])))).toBe(true);
    expect(db.every((x) => !String(x.attributes['db.query.text']).includes('user t1@example.com'))).toBe(true);
    // The delivery job continues the request's trace, and its webhook POST is a child of the job.
    expect(job.spanContext().traceId).toBe(traceId);
    expect(parentOf(job)).toBe(server.spanContext().spanId);
    expect(job.attributes['gatehouse.job.task']).toBe('webhook_deliver');
    const post = await eventually(async () =>
      inTrace(traceId).find((x) => x.name === 'POST' && parentOf(x) === job.spanContext().spanId),
    );
    expect(post.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200 });
    expect(JSON.stringify(post.attributes)).not.toContain('127.0.0.1');
    // The job's SQL is in the same trace too.
    expect(inTrace(traceId).some((x) => x.name === 'db.query' && parentOf(x) === job.spanContext().spanId)).toBe(true);
  });

  it('stores the trace context in the job payload, only when traced, and hands the task its own payload', async () => {
    const future = new Date(Date.now() + 3_600_000);
    const payloadOf = async (id: number) =>
      (
        await sql<{ payload: Record<string, unknown> }>`
          select payload from graphile_worker._private_jobs where id = ${id}`.execute(s.container.db)
      ).rows[0]?.payload;
    let traceId = '';
    const traced = await inSpan('test', {}, async (span) => {
      traceId = span.spanContext().traceId;
      return enqueue(s.container.db, 'audit_purge', { a: 1 }, { maxAttempts: 1, runAt: future });
    });
    const stored = await payloadOf(traced);
    expect(stored).toEqual({
      a: 1,
      _trace: { traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/) },
    });
    expect(String((stored?._trace as { traceparent?: string } | undefined)?.traceparent).split('-')[1]).toBe(traceId);
    const { payload, parent } = takeTraceContext(stored);
    expect(payload).toEqual({ a: 1 });
    expect(otelTrace.getSpanContext(parent)?.traceId).toBe(traceId);
    // Outside any span nothing is added.
    const plain = await enqueue(s.container.db, 'audit_purge', { a: 2 }, { maxAttempts: 1, runAt: future });
    expect(await payloadOf(plain)).toEqual({ a: 2 });
  });

  it('continues the trace of an incoming traceparent header', async () => {
    exporter.reset();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await fetch(`${s.adminUrl}/admin/clients`, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(r.status).toBe(200);
    const server = await eventually(async () => spans().find((x) => x.name === 'GET /admin/clients'));
    expect(server.spanContext().traceId).toBe(traceId);
    expect(parentOf(server)).toBe('00f067aa0ba902b7');
  });
});
