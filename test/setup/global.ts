/**
 * Picks the PostgreSQL for the whole run — DATABASE_URL when set, else a testcontainers PostgreSQL
 * when a Docker engine answers, else embedded PostgreSQL — and builds one migrated template
 * database. Each test file clones it (test/helpers/db.ts), so files run in parallel.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/core/db/embedded.ts';
import { migrate } from '../../src/core/db/migrate.ts';
import { dockerAvailable } from './docker.ts';
import { scanForSecrets } from './log-scan.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    /** Where test servers write their logs and the credentials they hand out (test/helpers/ledger.ts). */
    suiteLogDir: string;
  }
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  let adminUrl = process.env.DATABASE_URL;
  let stop: () => Promise<void> = async () => {};
  if (!adminUrl) {
    if (await dockerAvailable()) {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer('postgres:15-alpine').start();
      adminUrl = container.getConnectionUri();
      stop = async () => {
        await container.stop();
      };
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
      const epg = await startEmbeddedPostgres({ dir });
      adminUrl = epg.url;
      stop = async () => {
        await epg.stop();
        rmSync(dir, { recursive: true, force: true });
      };
    }
  }
  const template = `gh_tmpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => {});
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${template}`);
  const pool = new pg.Pool({ connectionString: withDatabase(adminUrl, template), max: 2 });
  pool.on('error', () => {});
  pool.on('connect', (c) => c.on('error', () => {})); // graphile-worker checks clients have listeners
  await migrate(pool);
  await pool.end();
  project.provide('pgAdminUrl', adminUrl);
  project.provide('pgTemplate', template);
  const logDir = mkdtempSync(join(tmpdir(), 'gatehouse-suite-log-'));
  project.provide('suiteLogDir', logDir);
  return async () => {
    // No credential a test server handed out may appear in any of their log lines.
    const scan = scanForSecrets(logDir);
    rmSync(logDir, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await stop();
    process.stdout.write(
      `\nlog scan: ${scan.lines} log lines of the test servers, ${scan.secrets} credentials handed out, ${scan.leaks.length} lines with a credential\n`,
    );
    if (scan.leaks.length) {
      for (const l of scan.leaks.slice(0, 20)) process.stdout.write(`  ${l.file}: ${l.line}\n`);
      throw new Error(`${scan.leaks.length} log lines hold a credential a test server handed out (see above)`);
    }
  };
}
