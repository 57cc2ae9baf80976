/**
 * `npm run bench`: autocannon on loopback against a real gatehouse. Every scenario is reported as a
 * ratio against a baseline measured in the same run (`GET /health/alive`: the HTTP stack with no
 * database work), because the machines are noisy. Bounded: each scenario runs BENCH_SECONDS (default 5).
 *
 *   npm run bench                       # all scenarios
 *   npm run bench -- token dsync        # only scenarios whose name contains one of the words
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { startBenchServer } from './server.ts';
import type { BenchRequest, Scenario } from './types.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

async function loadScenarios(): Promise<Scenario[]> {
  const dir = join(import.meta.dirname, 'scenarios');
  const out: Scenario[] = [];
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.ts'))
    .sort()) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { scenarios: Scenario[] };
    out.push(...mod.scenarios);
  }
  return out;
}

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  extra?: Record<string, number | string>;
}

async function fire(url: string, requests: BenchRequest[]): Promise<Omit<Result, 'name'>> {
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: requests.map((q) => ({
      method: q.method ?? 'GET',
      path: q.path,
      headers: q.headers ?? {},
      ...(q.body ? { body: q.body } : {}),
    })),
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}

const filters = process.argv.slice(2).map((s) => s.toLowerCase());
const all = await loadScenarios();
const chosen = filters.length ? all.filter((s) => filters.some((f) => s.name.toLowerCase().includes(f))) : all;
const server = await startBenchServer();
try {
  const baseline = {
    name: 'baseline: GET /health/alive (public)',
    ...(await fire(server.publicUrl, [{ path: '/health/alive' }])),
  };
  const results: Result[] = [baseline];
  for (const s of chosen) {
    const own = s.overrides ? await startBenchServer(s.overrides) : undefined;
    const target = own ?? server;
    try {
      const reqs = await s.setup(target);
      const base = s.listener === 'public' ? target.publicUrl : target.adminUrl;
      const res: Result = { name: s.name, ...(await fire(base, reqs)) };
      if (s.report) res.extra = await s.report(target);
      results.push(res);
    } finally {
      await own?.close();
    }
  }
  const line = (r: Result) =>
    `| ${r.name} | ${Math.round(r.rps)} | ${(r.rps / baseline.rps).toFixed(3)} | ${r.p50} | ${r.p99} | ${r.errors + r.non2xx} |${
      r.extra
        ? ` ${Object.entries(r.extra)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`
        : ''
    }`;
  process.stdout.write(`\n${SECONDS}s per scenario, ${CONNECTIONS} connections, node ${process.version}\n\n`);
  process.stdout.write(
    '| scenario | req/s | ratio to baseline | p50 ms | p99 ms | errors+non-2xx | notes\n|---|---|---|---|---|---|---\n',
  );
  for (const r of results) process.stdout.write(`${line(r)}\n`);
} finally {
  await server.close();
}
