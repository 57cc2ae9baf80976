/**
 * `npm run bench:observability`: what metrics and audit rows cost on the token and SCIM
 * paths, measured on ONE server whose per-process switches are flipped between short autocannon runs,
 * in interleaved rounds (off / metrics / metrics+audit, again and again), so that the noise of a
 * shared machine hits every mode alike. Prints the median req/s of each mode and its ratio to "off".
 * Bounded: ROUNDS (default 4) × 3 modes × 2 paths × SECONDS (default 3).
 */
import autocannon from 'autocannon';
import { configureAudit } from '../../../src/core/audit/events.ts';
import { configureMetrics } from '../../../src/core/observability/metrics.ts';
import { scimRequests, tokenRequest } from './requests.ts';
import { type BenchRequest, startBenchServer } from './server.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const MODES = [
  { label: 'metrics off, audit off', metrics: false, audit: false },
  { label: 'metrics on, audit off', metrics: true, audit: false },
  { label: 'metrics on, audit rows on', metrics: true, audit: true },
];

async function rps(url: string, requests: BenchRequest[]): Promise<{ rps: number; bad: number }> {
  const r = await autocannon({
    url,
    connections: 10,
    duration: SECONDS,
    requests: requests.map((q) => ({
      method: q.method ?? 'GET',
      path: q.path,
      headers: q.headers ?? {},
      ...(q.body ? { body: q.body } : {}),
    })),
  });
  return { rps: r.requests.average, bad: r.errors + r.timeouts + r.non2xx };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

// Default settings, as a user runs them.
const server = await startBenchServer();
try {
  const paths = [
    { name: 'POST /oauth2/token client_credentials (opaque)', requests: await tokenRequest(server) },
    { name: 'SCIM PUT /Users (8 directories, no webhook)', requests: await scimRequests(server) },
  ];
  const results = new Map<string, number[]>();
  let bad = 0;
  for (let round = 0; round < ROUNDS; round++)
    for (const p of paths)
      for (const m of MODES) {
        configureMetrics({ enabled: m.metrics });
        configureAudit({ enabled: m.audit });
        const r = await rps(server.publicUrl, p.requests);
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
  await server.close();
}
