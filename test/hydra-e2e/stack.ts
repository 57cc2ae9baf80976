/**
 * The processes Hydra's test/e2e/circle-ci.bash starts, here around gatehouse: gatehouse itself
 * (`serve all` from this checkout, configured with that script's variables, on a fresh database),
 * Ory's reference login/consent/logout app and Hydra's relying-party test app, each a child process
 * writing its log to a file. `stop()` ends all of them and drops the database.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const REPO = join(import.meta.dirname, '../..');
const GATEHOUSE = join(REPO, 'bin/gatehouse.mjs');

export interface StackOptions {
  /** The ory/hydra checkout (the relying-party app's source is read from it). */
  hydra: string;
  /** Holds node_modules of the relying-party app and of the reference login/consent app. */
  appModules: string;
  jwt: boolean;
  /** A PostgreSQL server URL that may create databases; unset: an embedded PostgreSQL. */
  databaseUrl: string | undefined;
  logDir: string;
}

export interface Stack {
  publicUrl: string;
  adminUrl: string;
  consentUrl: string;
  clientUrl: string;
  ports: { public: number; admin: number; consent: number; client: number };
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

export function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** The environment of circle-ci.bash (its `--jwt` variant when asked), on the given ports. */
function gatehouseEnv(p: Stack['ports'], dsn: string, jwt: boolean): Record<string, string> {
  const consent = `http://127.0.0.1:${p.consent}`;
  return {
    URLS_SELF_ISSUER: `http://127.0.0.1:${p.public}/`,
    URLS_DEVICE_VERIFICATION: `${consent}/device/verify`,
    URLS_DEVICE_SUCCESS: `${consent}/oauth2/device/success`,
    URLS_CONSENT: `${consent}/consent`,
    URLS_LOGIN: `${consent}/login`,
    URLS_LOGOUT: `${consent}/logout`,
    SECRETS_SYSTEM: 'youReallyNeedToChangeThis',
    OIDC_SUBJECT_IDENTIFIERS_SUPPORTED_TYPES: jwt ? 'public' : 'public,pairwise',
    OIDC_SUBJECT_IDENTIFIERS_PAIRWISE_SALT: 'youReallyNeedToChangeThis',
    SERVE_PUBLIC_CORS_ENABLED: 'true',
    SERVE_PUBLIC_CORS_ALLOWED_METHODS: 'POST,GET,PUT,DELETE',
    SERVE_ADMIN_CORS_ENABLED: 'true',
    SERVE_ADMIN_CORS_ALLOWED_METHODS: 'POST,GET,PUT,DELETE',
    LOG_LEVEL: 'trace',
    LOG_FORMAT: 'json',
    OAUTH2_EXPOSE_INTERNAL_ERRORS: '1',
    SERVE_PUBLIC_PORT: String(p.public),
    SERVE_ADMIN_PORT: String(p.admin),
    LOG_LEAK_SENSITIVE_VALUES: 'true',
    OIDC_DYNAMIC_CLIENT_REGISTRATION_ENABLED: 'true',
    // Not in circle-ci.bash: Hydra lets a dynamically registered client ask for any scope, gatehouse
    // only for oidc.dynamic_client_registration.allowed_scope (by default the default_scope values).
    // The registration specs ask for "foo openid offline_access".
    OIDC_DYNAMIC_CLIENT_REGISTRATION_ALLOWED_SCOPE: 'foo,openid,offline_access,offline',
    ...(jwt ? { STRATEGIES_ACCESS_TOKEN: 'jwt' } : {}),
    DSN: dsn,
    // Hydra sends back-channel logout requests from the serving process; gatehouse sends them from
    // its worker, which `serve all` runs in-process only when told to with a PostgreSQL DSN.
    WORKER_IN_PROCESS: 'on',
  };
}

/** The variables a child inherits: enough to run Node, none of the caller's configuration. */
export function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ', 'SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS'];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] ? [[k, process.env[k] as string]] : [])));
}

export async function waitFor(
  url: string,
  child: ChildProcess,
  name: string,
  log: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before it was ready; see ${log}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status < 500) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} did not answer ${url} within ${timeoutMs} ms; see ${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export async function startStack(o: StackOptions): Promise<Stack> {
  const children: ChildProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const c of children.reverse()) await stopChild(c).catch(() => {});
    for (const f of cleanups.reverse()) await f().catch(() => {});
  };
  try {
    let serverUrl = o.databaseUrl;
    if (!serverUrl) {
      const { startEmbeddedPostgres } = await import('../../src/core/db/embedded.ts');
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hydra-e2e-pg-'));
      const epg = await startEmbeddedPostgres({ dir });
      serverUrl = epg.url;
      cleanups.push(async () => {
        await epg.stop();
        rmSync(dir, { recursive: true, force: true });
      });
    }
    const db = `gatehouse_hydra_e2e_${process.pid}_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${db}`);
    await admin.end();
    cleanups.push(async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await c.end();
    });
    const dsn = withDatabase(serverUrl, db);

    const ports = {
      public: await freePort(),
      admin: await freePort(),
      consent: await freePort(),
      client: await freePort(),
    };
    const url = (port: number) => `http://127.0.0.1:${port}`;
    const spawnLogged = (name: string, args: string[], env: Record<string, string>, cwd: string) => {
      const log = join(o.logDir, `${name}.log`);
      const out = createWriteStream(log);
      const child = spawn(process.execPath, args, {
        cwd,
        env: { ...baseEnv(), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.pipe(out);
      child.stderr?.pipe(out);
      children.push(child);
      return { child, log };
    };

    const ghEnv = gatehouseEnv(ports, dsn, o.jwt);
    // circle-ci.bash: `hydra migrate sql up --yes $TEST_DATABASE`, then `hydra serve all --dev --sqa-opt-out`.
    await promisify(execFile)(process.execPath, [GATEHOUSE, 'migrate', 'sql', 'up', '--yes', dsn], {
      cwd: REPO,
      env: { ...baseEnv(), ...ghEnv },
    });
    const gh = spawnLogged('gatehouse', [GATEHOUSE, 'serve', 'all', '--dev', '--sqa-opt-out'], ghEnv, REPO);

    const appModules = join(o.appModules, 'node_modules');
    const consentApp = join(appModules, 'hydra-login-consent-logout/lib/app.js');
    if (!existsSync(consentApp))
      throw new Error(`${consentApp} is missing: run the install step (docs/development.md)`);
    // circle-ci.bash: `PORT=5002 HYDRA_ADMIN_URL=… npm run consent` in test/e2e/oauth2-client.
    const lc = spawnLogged(
      'login-consent-logout',
      [consentApp],
      { PORT: String(ports.consent), HYDRA_ADMIN_URL: url(ports.admin), NODE_ENV: 'development' },
      o.appModules,
    );
    // circle-ci.bash: `ADMIN_URL=… PUBLIC_URL=… PORT=5003 npm run start` in test/e2e/oauth2-client;
    // its source is the checkout's, its packages the installed ones (NODE_PATH).
    const rp = spawnLogged(
      'oauth2-client',
      [join(o.hydra, 'test/e2e/oauth2-client/src/index.js')],
      {
        ADMIN_URL: url(ports.admin),
        PUBLIC_URL: url(ports.public),
        AUTHORIZATION_SERVER_URL: `${url(ports.public)}/`,
        PORT: String(ports.client),
        NODE_PATH: appModules,
      },
      join(o.hydra, 'test/e2e/oauth2-client'),
    );

    await waitFor(`${url(ports.public)}/health/ready`, gh.child, 'gatehouse', gh.log);
    await waitFor(`${url(ports.admin)}/health/ready`, gh.child, 'gatehouse', gh.log);
    await waitFor(`${url(ports.consent)}/`, lc.child, 'the login/consent app', lc.log);
    await waitFor(`${url(ports.client)}/oauth2/callback`, rp.child, 'the oauth2-client app', rp.log);

    return {
      publicUrl: url(ports.public),
      adminUrl: url(ports.admin),
      consentUrl: url(ports.consent),
      clientUrl: url(ports.client),
      ports,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
