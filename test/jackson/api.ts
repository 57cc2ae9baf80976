/**
 * Jackson's end-to-end API specs for directory sync (e2e/api/v1/directory-sync and e2e/api/scim/v2.0
 * of a boxyhq/jackson checkout, Playwright test files run unmodified with @playwright/test, no
 * browser) against a gatehouse started as an operator starts it: `gatehouse migrate sql up`, then
 * `gatehouse serve all` from this checkout with its worker in the process, on a fresh database.
 *
 * In front of gatehouse, on the specs' base URL, a loopback proxy passes every request on, except
 * `/api/hello`: Jackson's sample endpoint, which its events spec uses as a directory's webhook URL
 * (it answers 200). `dsync.api.listener` is `public`, so that the management API and SCIM share one
 * base URL, as in Jackson.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { baseEnv, freePort, stopChild, waitFor, withDatabase } from '../hydra-e2e/stack.ts';

const REPO = join(import.meta.dirname, '../..');
const GATEHOUSE = join(REPO, 'bin/gatehouse.mjs');
const API_KEY = 'jackson-e2e-api-key-0123456789';
const SPECS = ['v1/directory-sync', 'scim/v2.0'];

export interface ApiSpecResult {
  file: string;
  title: string;
  status: string;
  error?: string;
}

/** Passes requests on to `target`, except Jackson's sample `/api/hello`. */
function startProxy(target: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] === '/api/hello') {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"John Doe"}');
      return;
    }
    const up = httpRequest(
      { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })),
  );
}

interface PlaywrightSuite {
  file?: string;
  title?: string;
  suites?: PlaywrightSuite[];
  specs?: Array<{
    title: string;
    file: string;
    tests: Array<{ results: Array<{ status: string; error?: { message?: string } }>; status: string }>;
  }>;
}

function results(report: { suites?: PlaywrightSuite[] }): ApiSpecResult[] {
  const out: ApiSpecResult[] = [];
  const walk = (s: PlaywrightSuite, path: string[]) => {
    for (const spec of s.specs ?? [])
      for (const t of spec.tests) {
        const last = t.results.at(-1);
        out.push({
          file: spec.file,
          title: [...path, spec.title].join(' > '),
          status: last?.status ?? t.status,
          ...(last?.error?.message ? { error: last.error.message.split('\n')[0] } : {}),
        });
      }
    for (const c of s.suites ?? []) walk(c, s.title && !s.file ? [...path, s.title] : path);
  };
  for (const s of report.suites ?? []) walk(s, []);
  return out;
}

/** Runs the specs in `work/e2e/api` (prepared by run.ts) against a fresh gatehouse; returns each test's result. */
export async function runApiSpecs(o: { work: string; cache: string; databaseUrl: string }): Promise<ApiSpecResult[]> {
  const db = `gh_jackson_api_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: o.databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  const dsn = withDatabase(o.databaseUrl, db);
  const children: ChildProcess[] = [];
  let proxy: Server | undefined;
  try {
    const [pub, adm] = [await freePort(), await freePort()];
    const front = await startProxy(pub);
    proxy = front.server;
    const baseURL = `http://127.0.0.1:${front.port}`;
    const env = {
      ...baseEnv(),
      DSN: dsn,
      SECRETS_SYSTEM: 'jackson-e2e-system-secret-0123456789',
      SERVE_PUBLIC_PORT: String(pub),
      SERVE_ADMIN_PORT: String(adm),
      SERVE_PUBLIC_HOST: '127.0.0.1',
      SERVE_ADMIN_HOST: '127.0.0.1',
      URLS_SELF_ISSUER: `http://127.0.0.1:${pub}/`,
      DSYNC_API_KEYS: API_KEY,
      DSYNC_API_LISTENER: 'public',
      DSYNC_EXTERNAL_URL: baseURL,
      // Jackson posts webhooks from the process that serves; gatehouse's worker runs in it when told.
      WORKER_IN_PROCESS: 'on',
    };
    await promisify(execFile)(process.execPath, [GATEHOUSE, 'migrate', 'sql', 'up', '--yes', dsn], { cwd: REPO, env });
    const log = join(o.work, 'gatehouse.log');
    const out = createWriteStream(log);
    const gh = spawn(process.execPath, [GATEHOUSE, 'serve', 'all', '--sqa-opt-out'], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    gh.stdout.pipe(out);
    gh.stderr.pipe(out);
    children.push(gh);
    await waitFor(`${baseURL}/health/ready`, gh, 'gatehouse', log);

    const config = join(o.work, 'playwright.config.cjs');
    writeFileSync(
      config,
      `module.exports = ${JSON.stringify(
        {
          testDir: join(o.work, 'e2e/api'),
          testMatch: SPECS.map((s) => `${s}/**/*.spec.ts`),
          workers: 1,
          retries: 0,
          timeout: 100_000,
          reporter: [['json', { outputFile: join(o.work, 'playwright-report.json') }], ['list']],
          use: { baseURL },
        },
        null,
        2,
      )};\n`,
    );
    const cli = join(o.cache, 'node_modules/@playwright/test/cli.js');
    const pw = spawn(process.execPath, [cli, 'test', '-c', config], {
      cwd: o.work,
      env: { ...baseEnv(), JACKSON_API_KEYS: API_KEY, CI: '1' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(pw);
    await new Promise((r) => pw.on('close', r));
    return results(JSON.parse(readFileSync(join(o.work, 'playwright-report.json'), 'utf8')));
  } finally {
    for (const c of children.reverse()) await stopChild(c).catch(() => {});
    await new Promise((r) => (proxy ? proxy.close(r) : r(undefined)));
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.end();
  }
}
