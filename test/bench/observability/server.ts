/** Boots gatehouse in this process on a fresh database (DATABASE_URL, else embedded PostgreSQL), for the observability cost benchmark. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../../src/core/config/load.ts';
import { type Container, createContainer } from '../../../src/container.ts';
import { startEmbeddedPostgres } from '../../../src/core/db/embedded.ts';
import { loadTaskList, startWorker } from '../../../src/core/jobs/runner.ts';
import { createLogger } from '../../../src/core/log.ts';
import { serve } from '../../../src/server.ts';

export interface BenchRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface TestServerLike {
  publicUrl: string;
  adminUrl: string;
  container: Container;
  close(): Promise<void>;
}

export async function startBenchServer(overrides: Record<string, unknown> = {}): Promise<TestServerLike> {
  let base = process.env.DATABASE_URL;
  let stopPg = async () => {};
  if (!base) {
    const dir = mkdtempSync(join(tmpdir(), 'gh-bench-'));
    const epg = await startEmbeddedPostgres({ dir });
    base = epg.url;
    stopPg = async () => {
      await epg.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const name = `gh_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  const config = loadConfig({
    env: {},
    overrides: {
      dsn: u.toString(),
      dev: true,
      'secrets.system': ['bench-system-secret-0123456789'],
      'serve.public.port': 0,
      'serve.admin.port': 0,
      'serve.public.host': '127.0.0.1',
      'serve.admin.host': '127.0.0.1',
      'db.pool.max': 20,
      ...overrides,
    },
  });
  const container = await createContainer({
    config,
    log: createLogger({ level: 'silent' }),
    databaseUrl: u.toString(),
    autoMigrate: true,
  });
  const s = await serve(container, 'all');
  const runner = await startWorker({
    pool: container.pool,
    log: container.log,
    concurrency: 4,
    pollInterval: 200,
    taskList: await loadTaskList(container),
  });
  return {
    publicUrl: s.public?.url as string,
    adminUrl: s.admin?.url as string,
    container,
    async close() {
      await s.close(1000);
      await runner.stop();
      await container.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
      await stopPg();
    },
  };
}
