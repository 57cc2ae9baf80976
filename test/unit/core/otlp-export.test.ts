/**
 * `tracing.provider: otel` loads the SDK and the OTLP/HTTP exporter and sends spans to
 * `tracing.providers.otlp.server_url` (`host:port`, plain HTTP with `insecure`) at `/v1/traces`;
 * with no provider nothing is registered and spans are no-ops.
 */
import { createServer } from 'node:http';
import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { inSpan, startTracing } from '../../../src/core/observability/tracing.ts';

const cfg = (provider: string, server_url: string) => ({
  provider,
  service_name: 'gatehouse-otlp-test',
  providers: { otlp: { server_url, insecure: true, sampling: { sampling_ratio: 1 } } },
});

describe('OTLP export', () => {
  it('is off without a provider', async () => {
    expect(await startTracing(cfg('', 'localhost:4318'))).toBeUndefined();
    expect(await startTracing(cfg('jaeger', 'localhost:4318'))).toBeUndefined(); // Hydra's, not implemented
    await inSpan('noop', {}, async (span) => expect(span.isRecording()).toBe(false));
  });

  it('posts spans to <server_url>/v1/traces when tracing.provider is otel', async () => {
    const received: Array<{ path: string; type: string; bytes: number }> = [];
    const collector = createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: req.headers['content-type'] ?? '', bytes });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const port = (collector.address() as { port: number }).port;
    const handle = await startTracing(cfg('otel', `127.0.0.1:${port}`), { version: '1.2.3' });
    expect(handle).toBeDefined();
    try {
      await inSpan('exported', { attributes: { a: 1 } }, async (span) => {
        expect(span.isRecording()).toBe(true);
        expect(trace.getActiveSpan()).toBe(span);
      });
    } finally {
      await handle?.shutdown(); // flushes the batch
      await new Promise<void>((r) => collector.close(() => r()));
    }
    expect(received.length).toBeGreaterThan(0);
    expect(received[0]?.path).toBe('/v1/traces');
    expect(received[0]?.bytes).toBeGreaterThan(0);
  });
});
