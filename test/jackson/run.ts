/**
 * BoxyHQ Jackson's own directory-sync tests (the tap suites under npm/test/dsync of a boxyhq/jackson
 * checkout) against gatehouse's `controllers()`, the test files unmodified. See docs/development.md.
 *
 *   node test/jackson/run.ts install --jackson <checkout>   installs tap, Playwright and the tests' packages (pinned by the checkout)
 *   node test/jackson/run.ts --jackson <checkout>           runs directories, users, groups and membership
 *   node test/jackson/run.ts api --jackson <checkout>       runs the end-to-end API specs of directory sync (./api.ts)
 *
 * Options: --suite <name> (repeatable; a file name under npm/test/dsync without .test.ts, e.g.
 * `webhooks`), --cache <dir> (default $JACKSON_TESTS_CACHE or ~/.cache/gatehouse-jackson-tests),
 * --database-url <url> (default $DATABASE_URL; each test file gets a database of its own, dropped
 * after it). The checkout may also come from $JACKSON_CHECKOUT.
 *
 * What stands in for Jackson's sources: `src/index.ts` (its factory: gatehouse's controllers() on
 * the file's database, ./shim-index.ts), `src/typings.ts` (types only), and the one helper a test
 * imports from Jackson's code (`isConnectionActive`). Each file runs in a process of its own with
 * tsx, as tap runs it; the runner reads its TAP and counts its test points as tap's runner does.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runApiSpecs } from './api.ts';

const REPO = join(import.meta.dirname, '../..');
const DEFAULT_SUITES = ['directories', 'users', 'groups', 'membership'];
/** A test file that has not finished by then is stopped and counted as failed. */
const FILE_TIMEOUT_MS = 300_000;

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    jackson: { type: 'string' },
    cache: { type: 'string' },
    suite: { type: 'string', multiple: true },
    'database-url': { type: 'string' },
  },
});

const checkoutPath = args.jackson ?? process.env.JACKSON_CHECKOUT;
if (!checkoutPath) {
  console.error('usage: node test/jackson/run.ts [install] --jackson <boxyhq/jackson checkout> [--suite users]');
  process.exit(2);
}
const checkout = resolve(checkoutPath);
const npmDir = join(checkout, 'npm');
const cache = resolve(
  args.cache ?? process.env.JACKSON_TESTS_CACHE ?? join(homedir(), '.cache/gatehouse-jackson-tests'),
);

/**
 * tap, Playwright's test runner and the test files' packages at the versions the checkout pins
 * (npm/package.json, and the root package.json for Playwright), plus tsx to load TypeScript.
 */
function dependencies(): Record<string, string> {
  type Pkg = { devDependencies?: Record<string, string>; dependencies?: Record<string, string> };
  const read = (file: string): Record<string, string> => {
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as Pkg;
    return { ...pkg.dependencies, ...pkg.devDependencies };
  };
  const all = { ...read(join(checkout, 'package.json')), ...read(join(npmDir, 'package.json')) };
  const deps: Record<string, string> = { tsx: '^4.19.0' };
  for (const name of ['tap', '@faker-js/faker', 'sinon', 'axios', '@playwright/test']) {
    const v = all[name];
    if (v) deps[name] = v;
  }
  return deps;
}

function install(): void {
  mkdirSync(cache, { recursive: true });
  writeFileSync(
    join(cache, 'package.json'),
    `${JSON.stringify({ name: 'gatehouse-jackson-tests', private: true, dependencies: dependencies() }, null, 2)}\n`,
  );
  execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: cache, stdio: 'inherit' });
  console.log(`installed into ${cache}`);
}

if (positionals[0] === 'install') {
  install();
  process.exit(0);
}

const installed = (() => {
  try {
    const want = dependencies();
    const pkg = JSON.parse(readFileSync(join(cache, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    return (
      Object.entries(want).every(([k, v]) => pkg.dependencies?.[k] === v) && existsSync(join(cache, 'node_modules'))
    );
  } catch {
    return false;
  }
})();
if (!installed) {
  console.error(
    `The test packages of ${checkout} are not installed in ${cache} (or are of another version); run:\n` +
      `  npm run test:jackson -- install --jackson ${checkout}${args.cache ? ` --cache ${cache}` : ''}`,
  );
  process.exit(2);
}

const databaseUrl = args['database-url'] ?? process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('set DATABASE_URL (or --database-url): a PostgreSQL where databases may be created');
  process.exit(2);
}

/** The work tree: Jackson's test folder as it is, the stand-ins for its sources, the cache's packages. */
function prepare(): string {
  const work = join(cache, 'work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'npm/src/controller'), { recursive: true });
  cpSync(join(npmDir, 'test/utils.ts'), join(work, 'npm/test/utils.ts'));
  cpSync(join(npmDir, 'test/dsync'), join(work, 'npm/test/dsync'), { recursive: true });
  cpSync(join(checkout, 'e2e/api'), join(work, 'e2e/api'), { recursive: true });
  // The API specs import Jackson's test data by the package's name.
  const pkgLink = join(cache, 'node_modules/@boxyhq/saml-jackson');
  rmSync(pkgLink, { recursive: true, force: true });
  mkdirSync(join(cache, 'node_modules/@boxyhq'), { recursive: true });
  symlinkSync(join(work, 'npm'), pkgLink);
  // Jackson's npm package is CommonJS: its test files are loaded as such.
  writeFileSync(join(work, 'npm/package.json'), '{ "private": true, "type": "commonjs" }\n');
  symlinkSync(join(cache, 'node_modules'), join(work, 'node_modules'));
  cpSync(join(REPO, 'test/jackson/shim-index.ts'), join(work, 'npm/src/index.ts'));
  writeFileSync(
    join(work, 'npm/src/typings.ts'),
    "// Jackson's types: the tests import them only as types.\nexport {};\n",
  );
  writeFileSync(
    join(work, 'npm/src/loadConnection.ts'),
    "// SSO connections are not directory sync: test/utils.ts imports this for its SSO helper only.\nexport default async function loadConnection(): Promise<never> {\n  throw new Error('SSO connections are not part of gatehouse');\n}\n",
  );
  // The one helper of Jackson's code a test imports (directories.test.ts), as Jackson defines it:
  // a record with a `deactivated` field is active when that field is false.
  writeFileSync(
    join(work, 'npm/src/controller/utils.ts'),
    "export const isConnectionActive = (c: object): boolean =>\n  'deactivated' in c ? (c as { deactivated: unknown }).deactivated === false : true;\n",
  );
  return work;
}

interface Point {
  ok: boolean;
  name: string;
  todo?: unknown;
  skip?: unknown;
}
interface Result {
  suite: string;
  pass: number;
  fail: number;
  todo: number;
  skip: number;
  failures: string[];
  exit: number | null;
}

/**
 * Counts the file's test points as tap's runner totals them: every point at every level (a
 * subtest's own point included), plus the file's point, which passes when the process exits 0
 * with no failed point.
 */
function count(suite: string, tap: string, exit: number | null): Result {
  const require = createRequire(join(cache, 'package.json'));
  type P = NodeJS.WritableStream & {
    name?: string;
    on(event: 'assert', fn: (p: Point) => void): void;
    on(event: 'child', fn: (c: P) => void): void;
  };
  const { Parser } = require('tap-parser') as { Parser: new () => P };
  const r: Result = { suite, pass: 0, fail: 0, todo: 0, skip: 0, failures: [], exit };
  const watch = (p: P, path: string[]) => {
    p.on('child', (child) => watch(child, [...path, child.name ?? '']));
    p.on('assert', (a) => {
      if (a.todo) r.todo++;
      else if (a.skip) r.skip++;
      else if (a.ok) r.pass++;
      else {
        r.fail++;
        r.failures.push([...path, a.name].filter(Boolean).join(' > '));
      }
    });
  };
  const parser = new Parser();
  watch(parser, []);
  parser.end(tap);
  if (exit === 0 && r.fail === 0) r.pass++;
  else {
    r.fail++;
    r.failures.push(`the file (exit code ${exit})`);
  }
  return r;
}

async function runFile(work: string, suite: string): Promise<Result> {
  const file = join(work, `npm/test/dsync/${suite}.test.ts`);
  if (!existsSync(file)) throw new Error(`no such suite: npm/test/dsync/${suite}.test.ts`);
  const name = `gh_jackson_${suite.replace(/\W/g, '_')}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(databaseUrl as string);
  url.pathname = `/${name}`;
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: join(work, 'npm'),
      env: {
        ...process.env,
        BOXYHQ_NO_ANALYTICS: '1',
        TAP: '1',
        GATEHOUSE_SRC: join(REPO, 'src/index.ts'),
        GATEHOUSE_JACKSON_DB: url.toString(),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), FILE_TIMEOUT_MS);
    const exit = await new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    clearTimeout(timer);
    const r = count(suite, out, exit);
    if (r.pass + r.fail === 0) r.failures.push(`no assertion ran: ${err.trim().split('\n').slice(-5).join(' | ')}`);
    return r;
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

const work = prepare();
let failed = false;
if (positionals[0] === 'api') {
  const rs = await runApiSpecs({ work, cache, databaseUrl });
  const passed = rs.filter((r) => r.status === 'passed').length;
  console.log(`\n${passed} of ${rs.length} API tests passed`);
  for (const r of rs.filter((x) => x.status !== 'passed'))
    console.log(`  ${r.status}: ${r.file} > ${r.title}${r.error ? `: ${r.error}` : ''}`);
  process.exit(passed === rs.length && rs.length > 0 ? 0 : 1);
}

const results: Result[] = [];
for (const suite of args.suite?.length ? args.suite : DEFAULT_SUITES) results.push(await runFile(work, suite));

console.log('\n| suite | passed | failed | skipped/todo |\n|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.suite} | ${r.pass} | ${r.fail} | ${r.skip + r.todo} |`);
  if (r.fail || r.failures.length || r.pass === 0) failed = true;
}
const pass = results.reduce((n, r) => n + r.pass, 0);
const total = results.reduce((n, r) => n + r.pass + r.fail, 0);
console.log(`\n${pass} of ${total} test points passed`);
for (const r of results) for (const f of r.failures) console.log(`  not ok: ${r.suite} > ${f}`);
process.exit(failed ? 1 : 0);
