/**
 * `npm run bench:fleet`: throughput of 1, 2 and 3 `serve all` processes on one database, for the
 * capacity page (docs/scaling.md). For each process count, autocannon (in this process) spreads
 * BENCH_CONNECTIONS connections evenly over the processes (one autocannon per process, run at
 * once; the figures are summed) for BENCH_SECONDS after a one-second warm-up, on two scenarios:
 * - `token`: POST /oauth2/token (client_credentials; a client-secret check and a token row per request);
 * - `discovery`: GET /.well-known/openid-configuration (no database work).
 * Needs DATABASE_URL (a server where it may create and drop a database).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

const CLI = resolve(import.meta.dirname, '../../src/cli/index.ts');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 30);
const SECRET = 'bench-fleet-system-secret-0123456789';
const base = process.env.DATABASE_URL;
if (!base) throw new Error('bench:fleet needs DATABASE_URL');

const freePort = () =>
  new Promise<number>((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => res(typeof a === 'object' && a ? a.port : 0));
    });
  });

const name = `gh_bench_fleet_${process.pid}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`create database ${name}`);
const u = new URL(base);
u.pathname = `/${name}`;
const dsn = u.toString();
const env = { PATH: process.env.PATH ?? '', DSN: dsn, SECRETS_SYSTEM: SECRET, LOG_LEVEL: 'error', DEV: 'true' };

const run = (args: string[], extra: Record<string, string> = {}) =>
  new Promise<void>((res, rej) => {
    const c = spawn(process.execPath, [CLI, ...args], { env: { ...env, ...extra }, stdio: 'inherit' });
    c.on('exit', (code) => (code === 0 ? res() : rej(new Error(`${args.join(' ')} exited ${code}`))));
  });
await run(['migrate', 'sql', '--yes']);

interface Web {
  child: ChildProcess;
  publicUrl: string;
  adminUrl: string;
}
async function startWeb(): Promise<Web> {
  const [p, a] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [CLI, 'serve', 'all'], {
    env: {
      ...env,
      SERVE_PUBLIC_PORT: String(p),
      SERVE_ADMIN_PORT: String(a),
      SERVE_PUBLIC_HOST: '127.0.0.1',
      SERVE_ADMIN_HOST: '127.0.0.1',
      URLS_SELF_ISSUER: 'http://127.0.0.1:4444/',
      WORKER_IN_PROCESS: 'off',
    },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const w = { child, publicUrl: `http://127.0.0.1:${p}`, adminUrl: `http://127.0.0.1:${a}` };
  for (let i = 0; i < 400; i++) {
    try {
      if ((await fetch(`${w.adminUrl}/health/ready`)).status === 200) return w;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('serve did not become ready');
}

const webs: Web[] = [];
try {
  webs.push(await startWeb());
  const created = await fetch(`${webs[0]?.adminUrl}/admin/clients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_types: ['client_credentials'], response_types: ['token'], scope: 'read' }),
  });
  const client = (await created.json()) as { client_id: string; client_secret: string };
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
  const scenarios = {
    token: {
      method: 'POST',
      path: '/oauth2/token',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&scope=read',
    },
    discovery: { method: 'GET', path: '/.well-known/openid-configuration' },
  } as const;
  const rows: string[] = [];
  for (let n = 1; n <= 3; n++) {
    while (webs.length < n) webs.push(await startWeb());
    for (const [scenario, req] of Object.entries(scenarios)) {
      const fire = (seconds: number) =>
        Promise.all(
          webs.map((w) =>
            autocannon({
              url: w.publicUrl,
              connections: Math.max(1, Math.round(CONNECTIONS / n)),
              duration: seconds,
              requests: [{ ...req, headers: { ...('headers' in req ? req.headers : {}) } }],
            }),
          ),
        );
      await fire(1);
      const rs = await fire(SECONDS);
      const rps = rs.reduce((s, r) => s + r.requests.average, 0);
      const p99 = Math.max(...rs.map((r) => r.latency.p99));
      const bad = rs.reduce((s, r) => s + r.errors + r.timeouts + r.non2xx, 0);
      const line = `${n} web process(es)  ${scenario.padEnd(10)} ${rps.toFixed(0).padStart(6)} req/s  p99 ${p99} ms  errors/non-2xx ${bad}`;
      rows.push(line);
      process.stderr.write(`${line}\n`);
    }
  }
  const load = (await import('node:os')).loadavg().map((x) => x.toFixed(1));
  process.stdout.write(`${rows.join('\n')}\nload average at the end: ${load.join(' ')}\n`);
} finally {
  for (const w of webs) w.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}
