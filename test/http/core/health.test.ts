import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';

describe('HTTP skeleton', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('answers /health/alive, /health/ready and /version on both listeners', async () => {
    for (const base of [s.publicUrl, s.adminUrl]) {
      const alive = await fetch(`${base}/health/alive`);
      expect(alive.status).toBe(200);
      expect(await alive.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${base}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ok' });
      expect(ready.headers.get('cache-control')).toBe('private, no-cache, no-store, must-revalidate');
      const v = await fetch(`${base}/version`);
      expect(((await v.json()) as { version: string }).version).toMatch(/^v\d{2}\.\d+\.\d+$/);
    }
    const prefixed = await fetch(`${s.adminUrl}/admin/health/ready`);
    expect(prefixed.status).toBe(200);
  });

  it('reports not ready with 503 when a migration is pending', async () => {
    await s.container.pool.query('DELETE FROM gatehouse_schema_migrations WHERE version = 1');
    try {
      const r = await fetch(`${s.adminUrl}/health/ready`);
      expect(r.status).toBe(503);
      expect(((await r.json()) as { errors: { migrations: string } }).errors.migrations).toMatch(/migrate sql/);
      const pub = await fetch(`${s.publicUrl}/health/ready`);
      expect(pub.status).toBe(503);
      expect(await pub.json()).toEqual({ errors: { migrations: 'not ready' } });
    } finally {
      const { listMigrationFiles } = await import('../../../src/core/db/migrate.ts');
      const f = listMigrationFiles()[0]!;
      await s.container.pool.query(
        'INSERT INTO gatehouse_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)',
        [f.version, f.name, f.checksum],
      );
    }
  });

  it('answers malformed JSON with a 400 JSON error, never a stack trace', async () => {
    // A route that takes JSON (a POST to a GET-only route is 405 before any body is read).
    const r = await fetch(`${s.adminUrl}/admin/trust/grants/jwt-bearer/issuers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":',
    });
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    const body = await r.json();
    expect(body).toEqual({
      error: 'The request was malformed or contained invalid parameters',
      error_description: 'The request body is not valid JSON.',
    });
  });

  it('answers an unknown route with Hydra’s 404 JSON and a wrong method with 405', async () => {
    const r = await fetch(`${s.publicUrl}/no/such/route`);
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: { reason: string } }).error.reason).toMatch(/requested route does not exist/);
    const m = await fetch(`${s.publicUrl}/health/alive`, { method: 'DELETE' });
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toMatch(/GET/);
    expect(await m.json()).toEqual({ error: 'Method Not Allowed', error_description: '' });
  });

  it('echoes a request id, strips one trailing slash and maps admin routes without /admin', async () => {
    const r = await fetch(`${s.adminUrl}/health/alive/`, { headers: { 'x-request-id': 'req-123' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBe('req-123');
    const gen = await fetch(`${s.publicUrl}/health/alive`);
    expect(gen.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
