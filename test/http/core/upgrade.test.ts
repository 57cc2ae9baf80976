/**
 * Versioning and upgrade safety with the fixture release history in
 * test/fixtures/migrations/upgrade (26.1.5 → 26.1.6 → 26.1.7 stepping stone → 26.2.0 with an index
 * and a required table). A "release" is a prefix of that folder; the CLI reads it through the
 * hidden `--migrations-dir` option.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate, migrationStatus } from '../../../src/core/db/migrate.ts';
import { TEST_SECRET } from '../../helpers/apps.ts';
import { CLI, runCli } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const UPGRADE = resolve(import.meta.dirname, '../../fixtures/migrations/upgrade');
const FILES = readdirSync(UPGRADE).sort();

/** A folder holding the fixture migrations with the given numbers (a release's sql/). */
function release(...versions: number[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'gh-rel-'));
  for (const f of FILES) if (versions.includes(Number(f.slice(0, 4)))) copyFileSync(join(UPGRADE, f), join(dir, f));
  return dir;
}
const R = {
  r1: () => release(1),
  r2: () => release(1, 2),
  stone: () => release(1, 2, 3),
  latest: () => release(1, 2, 3, 4, 5),
};

let database: TestDatabase;
let pool: pg.Pool;
let env: Record<string, string>;
const dbs: TestDatabase[] = [];

beforeEach(async () => {
  database = await createTestDatabase({ empty: true });
  dbs.push(database);
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => {});
  env = { DSN: database.url, SECRETS_SYSTEM: TEST_SECRET };
});
afterEach(async () => {
  await pool.end();
});
afterAll(async () => {
  for (const d of dbs) await d.drop();
});

const ledger = async () =>
  (await pool.query('SELECT version FROM gatehouse_schema_migrations ORDER BY version')).rows.map((r) => r.version);
const exists = async (name: string) => (await pool.query('SELECT to_regclass($1) AS t', [name])).rows[0].t !== null;
const oneLine = (s: string) => s.trim().split('\n');

describe('versioning', () => {
  it('numbers releases <yy>.<minor>.<patch> and prints them', async () => {
    const version = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../package.json'), 'utf8')).version;
    expect(version).toMatch(/^\d{2}\.\d+\.\d+$/);
    const v = await runCli(['version'], {});
    expect(v.code).toBe(0);
    expect(v.stdout).toBe(`gatehouse v${version}\n`);
    expect((await runCli(['--version'], {})).stdout.trim()).toBe(version);
  });

  it('on a Node.js older than package.json engines, says so in one line (no stack trace)', async () => {
    const old = `data:text/javascript,${encodeURIComponent(
      'Object.defineProperty(process, "versions", { value: { ...process.versions, node: "20.11.0" } });' +
        'Object.defineProperty(process, "version", { value: "v20.11.0" });',
    )}`;
    const r = await runCli(['version'], { NODE_OPTIONS: `--import=${old}` });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('gatehouse: Node.js >= 22.18 is required (this is v20.11.0)\n');
  });
});

describe('stepping stones', () => {
  it('a fresh database installs every release at once', async () => {
    expect((await migrate(pool, { dir: R.latest() })).applied).toHaveLength(5);
  });

  it('migrate refuses to jump over 26.1.7, naming it; installing 26.1.7 first then works', async () => {
    await migrate(pool, { dir: R.r2() });
    await expect(migrate(pool, { dir: R.latest() })).rejects.toThrow(/release 26\.1\.7 is a required stepping stone/);
    expect(await ledger()).toEqual([1, 2]);
    expect(await exists('fx_up_sessions')).toBe(false);

    const cli = await runCli(['migrate', 'sql', '--yes', '--migrations-dir', R.latest()], env);
    expect(cli.code).toBe(1);
    expect(oneLine(cli.stderr)).toEqual([
      expect.stringMatching(/install release 26\.1\.7, run its gatehouse migrate sql/),
    ]);
    expect(await ledger()).toEqual([1, 2]);

    const status = await runCli(['migrate', 'status', '--migrations-dir', R.latest()], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('pending  0003_fx_release_26_1_7.sql  [stepping-stone 26.1.7]');
    expect(status.stdout).toContain(
      'pending  0004_fx_accounts_email_idx.sql  [required-by-code, no-transaction, has-down]',
    );
    expect(status.stdout).toContain('3 pending');
    expect(status.stderr).toMatch(/release 26\.1\.7 is a required stepping stone/);

    expect((await runCli(['migrate', 'sql', '--yes', '--migrations-dir', R.stone()], env)).code).toBe(0);
    expect(await ledger()).toEqual([1, 2, 3]);
    const up = await runCli(['migrate', 'sql', '--yes', '--migrations-dir', R.latest()], env);
    expect(up.code).toBe(0);
    expect(up.stdout).toContain('applied 2 migration(s)');
    expect(await ledger()).toEqual([1, 2, 3, 4, 5]);
  });
});

function serveUntilReady(args: string[]): Promise<{ out: string; code: number | null }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, 'serve', 'all', ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        ...env,
        SERVE_PUBLIC_PORT: '0',
        SERVE_ADMIN_PORT: '0',
        SERVE_PUBLIC_HOST: '127.0.0.1',
        SERVE_ADMIN_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const onData = (d: Buffer) => {
      out += d;
      if (out.includes('gatehouse is serving')) child.kill('SIGTERM');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', rej);
    child.on('exit', (code) => {
      clearTimeout(timer);
      res({ out, code });
    });
  });
}

describe('serve and pending migrations', () => {
  it('refuses to start while migrations that create indexes or are marked required-by-code are pending', async () => {
    await migrate(pool, { dir: R.stone() });
    const both = await runCli(['serve', 'all', '--migrations-dir', R.latest()], env);
    expect(both.code).toBe(1);
    expect(oneLine(both.stderr)).toEqual([
      "refusing to start: 2 pending migration(s) that this release's queries need (0004_fx_accounts_email_idx.sql, 0005_fx_sessions.sql); run gatehouse migrate sql first",
    ]);
    expect(both.stdout).not.toContain('gatehouse is serving');
    const marked = await runCli(['serve', 'all', '--migrations-dir', release(1, 2, 3, 5)], env);
    expect(marked.code).toBe(1);
    expect(marked.stderr).toMatch(/\(0005_fx_sessions\.sql\); run gatehouse migrate sql first/);
  });

  it('starts with a warning when only plain migrations are pending', async () => {
    await migrate(pool, { dir: R.r1() });
    const r = await serveUntilReady(['--migrations-dir', R.r2()]);
    expect(r.out).toContain('migrations are pending: run gatehouse migrate sql');
    expect(r.out).toContain('0002_fx_accounts_cursor.sql');
    expect(r.out).toContain('gatehouse is serving');
    expect(r.code).toBe(0);
  });
});

describe('forward-only migrations', () => {
  it('refuses down without --force; with --force warns what it drops, needs --yes, reverts one step at a time', async () => {
    const dir = R.latest();
    await migrate(pool, { dir });
    const plain = await runCli(['migrate', 'sql', 'down', '--migrations-dir', dir], env);
    expect(plain.code).toBe(1);
    expect(oneLine(plain.stderr)).toEqual([
      expect.stringMatching(/^migrate sql down refused: migrations are forward-only/),
    ]);
    expect(await ledger()).toEqual([1, 2, 3, 4, 5]);

    const unconfirmed = await runCli(['migrate', 'sql', 'down', '--force', '--migrations-dir', dir], env);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toMatch(
      /^WARNING: reverting 0005_fx_sessions\.sql runs its down section and drops: table fx_up_sessions\./,
    );
    expect(unconfirmed.stderr).toMatch(/pass --yes/);
    expect(await exists('fx_up_sessions')).toBe(true);

    const first = await runCli(['migrate', 'sql', 'down', '--force', '--yes', '--migrations-dir', dir], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('reverted 0005_fx_sessions.sql\n');
    expect(await exists('fx_up_sessions')).toBe(false);
    expect(await ledger()).toEqual([1, 2, 3, 4]);

    const second = await runCli(['migrate', 'sql', 'down', '--force', '--yes', '--migrations-dir', dir], env);
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/drops: index fx_up_accounts_email_idx\./);
    expect(await exists('fx_up_accounts_email_idx')).toBe(false);

    const none = await runCli(['migrate', 'sql', 'down', '--force', '--yes', '--migrations-dir', dir], env);
    expect(none.code).toBe(1);
    expect(oneLine(none.stderr)).toEqual([
      'migrate sql down: 0003_fx_release_26_1_7.sql has no -- gatehouse:down section and cannot be reverted; restore a backup instead',
    ]);
    expect(await ledger()).toEqual([1, 2, 3]);

    // forward again: the reverted migrations apply anew
    expect((await migrate(pool, { dir })).applied).toEqual(['0004_fx_accounts_email_idx.sql', '0005_fx_sessions.sql']);
    expect((await migrationStatus(pool, dir)).every((s) => s.status === 'applied')).toBe(true);
  });
});
