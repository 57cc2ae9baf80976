/**
 * `node test/bench/observability-cost.ts`: what metrics and audit rows cost on the token and SCIM
 * paths, measured on two servers in one process (audit rows off and on, one database; the metrics
 * switch flipped between short autocannon runs), in interleaved rounds (off / metrics /
 * metrics+audit, again and again), so that the noise of a shared machine hits every mode alike. Prints the median req/s of each mode and its ratio to "off".
 * Bounded: ROUNDS (default 4) × 3 modes × 2 paths × SECONDS (default 3).
 */

import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createContainer } from '../../src/container.ts';
import { createLogger } from '../../src/core/log.ts';
import { configureMetrics } from '../../src/core/observability/metrics.ts';
import { serve } from '../../src/server.ts';
import { OBS_API_KEY, OBS_MODES, scimRequests, tokenRequests } from './scenarios/observability.ts';
import type { BenchRequest } from './types.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const MODES = OBS_MODES.map((m) => ({
  label: m.label,
  metrics: m.overrides['metrics.enabled'],
  audit: m.overrides['audit.enabled'],
}));

async function rps(url: string, requests: BenchRequest[]): Promise<{ rps: number; bad: number }> {
  const r = await autocannon({
    url,
    connections: 10,
    duration: SECONDS,
    requests: requests.map((q) => ({
      method: q.method ?? 'GET',
      path: q.path,
      headers: q.headers ?? {},
      ...(typeof q.body === 'string' ? { body: q.body } : {}),
    })),
  });
  return { rps: r.requests.average, bad: r.errors + r.timeouts + r.non2xx };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

// Two gatehouses in this process (no worker: nothing on these paths needs one) on one fresh database:
// audit rows are a setting of the container, so one runs with `audit.enabled` and one without; the
// metrics switch is the process's (its registry is). Each mode runs against its server.
const base = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL;
if (!base) throw new Error('set DATABASE_URL (a PostgreSQL the user may create databases on)');
const dbName = `gh_bench_obs_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const dsn = new URL(base);
dsn.pathname = `/${dbName}`;
const start = async (audit: boolean) => {
  const container = await createContainer({
    config: loadConfig({
      env: {},
      overrides: {
        dsn: dsn.toString(),
        dev: true,
        'secrets.system': ['bench-system-secret-0123456789'],
        'serve.public.port': 0,
        'serve.admin.port': 0,
        'serve.public.host': '127.0.0.1',
        'serve.admin.host': '127.0.0.1',
        'dsync.api_keys': [OBS_API_KEY],
        'audit.enabled': audit,
      },
    }),
    log: createLogger({ level: 'silent' }),
    databaseUrl: dsn.toString(),
    autoMigrate: true,
  });
  const serving = await serve(container, 'all');
  return { container, serving, urls: { url: serving.public?.url as string, adminUrl: serving.admin?.url as string } };
};
const servers = { off: await start(false), on: await start(true) };
try {
  // The clients and directories are rows of the shared database: either server answers for them.
  const urls = servers.off.urls;
  const paths = [
    { name: 'POST /oauth2/token client_credentials (opaque)', requests: await tokenRequests(urls) },
    { name: 'SCIM PUT /Users (8 directories, no webhook)', requests: await scimRequests(urls) },
  ];
  const results = new Map<string, number[]>();
  let bad = 0;
  for (let round = 0; round < ROUNDS; round++)
    for (const p of paths)
      for (const m of MODES) {
        configureMetrics({ enabled: m.metrics });
        const r = await rps((m.audit ? servers.on : servers.off).urls.url, p.requests);
        bad += r.bad;
        const key = `${p.name}|${m.label}`;
        results.set(key, [...(results.get(key) ?? []), r.rps]);
      }
  process.stdout.write(
    `\n${ROUNDS} interleaved rounds × ${SECONDS}s, 10 connections, node ${process.version}, errors+non-2xx ${bad}\n\n`,
  );
  process.stdout.write('| path | mode | median req/s | runs | ratio to off |\n|---|---|---|---|---|\n');
  for (const p of paths) {
    const off = median(results.get(`${p.name}|${MODES[0]?.label}`) ?? []);
    for (const m of MODES) {
      const runs = results.get(`${p.name}|${m.label}`) ?? [];
      process.stdout.write(
        `| ${p.name} | ${m.label} | ${Math.round(median(runs))} | ${runs.map(Math.round).join(' ')} | ${(median(runs) / off).toFixed(3)} |\n`,
      );
    }
  }
} finally {
  for (const s of [servers.on, servers.off]) {
    await s.serving.close(1000);
    await s.container.close();
  }
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
