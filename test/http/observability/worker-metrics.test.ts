/** `gatehouse worker` with `worker.metrics.port` serves Prometheus metrics, including its job counts. */
import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, TEST_SECRET } from '../../helpers/apps.ts';
import { CLI, runCli } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { sample, scrape } from '../../helpers/prometheus.ts';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.drop());

describe('gatehouse worker metrics', () => {
  it('listens on WORKER_METRICS_PORT and reports jobs by task and state; stops cleanly on SIGTERM', async () => {
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    try {
      await c.query(`select graphile_worker.add_job('audit_purge', '{}'::json, run_at := now() + interval '1 hour')`);
    } finally {
      await c.end();
    }
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'worker'], {
      env: {
        PATH: process.env.PATH ?? '',
        DSN: database.url,
        SECRETS_SYSTEM: TEST_SECRET,
        WORKER_METRICS_PORT: String(port),
        WORKER_METRICS_HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await eventually(async () => out.includes('worker metrics at /metrics/prometheus'), 45_000);
      const r = await scrape(`http://127.0.0.1:${port}/metrics/prometheus`);
      expect(r.status).toBe(200);
      expect(sample(r.samples, 'gatehouse_jobs', { task: 'audit_purge', state: 'scheduled' })).toBe(1);
      expect(sample(r.samples, 'gatehouse_db_pool_connections')).toBeGreaterThan(0);
      expect(sample(r.samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      // The signal handlers are in place once the runner has started.
      await eventually(async () => out.includes('worker started'), 45_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exit).toBe(0);
  }, 60_000);

  it('refuses a --concurrency that is not a whole number of slots, in one line', async () => {
    const r = await runCli(['worker', '--concurrency', 'lots'], { DSN: database.url, SECRETS_SYSTEM: TEST_SECRET });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--concurrency: expected a whole number of job slots, 1 or more \(got lots\)/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
