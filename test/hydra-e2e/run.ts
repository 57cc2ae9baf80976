/**
 * Ory Hydra's own end-to-end suite (the Cypress specs under cypress/integration of an ory/hydra
 * checkout) against gatehouse, in Debian's Chromium through playwright-core, with the runner of
 * ./cypress.ts in place of Cypress (whose binary cannot be installed here). See docs/development.md.
 *
 *   node test/hydra-e2e/run.ts install --hydra <checkout>   installs the apps' and specs' npm packages
 *   node test/hydra-e2e/run.ts --hydra <checkout> [--jwt]    runs the suite (nothing is fetched)
 *
 * Options: --cache <dir> (default $HYDRA_E2E_CACHE or ~/.cache/gatehouse-hydra-e2e), --spec <part>
 * (repeatable: only spec files whose path contains it), --retries <n> (Cypress's `retries`; default
 * 0, Hydra's cypress.json asks for 3), --database-url <url> (default $DATABASE_URL, else an embedded
 * PostgreSQL). The checkout may also come from $HYDRA_CHECKOUT.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin, registerHooks } from 'node:module';
import { homedir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { CypressRuntime, type TestResult } from './cypress.ts';
import { startStack } from './stack.ts';

const REPO = join(import.meta.dirname, '../..');

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    hydra: { type: 'string' },
    cache: { type: 'string' },
    jwt: { type: 'boolean', default: false },
    spec: { type: 'string', multiple: true },
    retries: { type: 'string', default: '0' },
    'database-url': { type: 'string' },
  },
});

const hydraPath = args.hydra ?? process.env.HYDRA_CHECKOUT;
if (!hydraPath) {
  console.error('usage: node test/hydra-e2e/run.ts [install] --hydra <ory/hydra checkout> [--jwt]');
  process.exit(2);
}
const hydra = resolve(hydraPath);
const cache = resolve(args.cache ?? process.env.HYDRA_E2E_CACHE ?? join(homedir(), '.cache/gatehouse-hydra-e2e'));
const rpSource = join(hydra, 'test/e2e/oauth2-client');
const rpModules = join(cache, 'oauth2-client');
const specModules = join(cache, 'specs');

interface HydraPackage {
  devDependencies?: Record<string, string>;
}

/** The packages Hydra's own package.json gives its specs (pinned there), plus chai 4, which Cypress 9 bundles. */
function specDependencies(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(hydra, 'package.json'), 'utf8')) as HydraPackage;
  const dev = pkg.devDependencies ?? {};
  const deps: Record<string, string> = { chai: '^4.5.0' };
  for (const name of ['dayjs', 'jsonwebtoken', 'uuid']) {
    const v = dev[name];
    if (!v) throw new Error(`${hydra}/package.json has no devDependency ${name}`);
    deps[name] = v;
  }
  return deps;
}

function install(): void {
  const npm = (cwd: string, npmArgs: string[]) =>
    execFileSync('npm', [...npmArgs, '--ignore-scripts', '--no-audit', '--no-fund'], { cwd, stdio: 'inherit' });
  mkdirSync(rpModules, { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) cpSync(join(rpSource, f), join(rpModules, f));
  // The relying-party app's lock file pins hydra-login-consent-logout (Ory's reference app) too.
  npm(rpModules, ['ci']);
  mkdirSync(specModules, { recursive: true });
  writeFileSync(
    join(specModules, 'package.json'),
    `${JSON.stringify({ private: true, dependencies: specDependencies() }, null, 2)}\n`,
  );
  npm(specModules, ['install']);
  console.log(`installed into ${cache}`);
}

function checkInstalled(): void {
  const lock = (dir: string) =>
    existsSync(join(dir, 'package-lock.json')) ? readFileSync(join(dir, 'package-lock.json'), 'utf8') : '';
  const wanted = JSON.stringify({ private: true, dependencies: specDependencies() });
  const have = existsSync(join(specModules, 'package.json'))
    ? JSON.stringify(JSON.parse(readFileSync(join(specModules, 'package.json'), 'utf8')))
    : '';
  if (!existsSync(join(rpModules, 'node_modules')) || lock(rpModules) !== lock(rpSource) || have !== wanted) {
    console.error(
      `The npm packages of ${hydra} are not installed in ${cache} (or are of another version); run:\n` +
        `  npm run test:hydra-e2e -- install --hydra ${hydra}${args.cache ? ` --cache ${cache}` : ''}`,
    );
    process.exit(2);
  }
}

/**
 * Loads the spec files as Cypress's bundler does: ES modules that may also call `require`, with
 * extension-less relative imports, and packages from the install cache.
 */
function registerSpecLoader(cypressDir: string): void {
  const root = pathToFileURL(cypressDir + sep).href;
  const depsParent = pathToFileURL(join(specModules, 'package.json')).href;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (!context.parentURL?.startsWith(root) || isBuiltin(specifier)) return nextResolve(specifier, context);
      if (specifier.startsWith('.')) {
        const base = fileURLToPath(new URL(specifier, context.parentURL));
        for (const candidate of [base, `${base}.js`, join(base, 'index.js')]) {
          if (existsSync(candidate) && !isDirectory(candidate)) {
            return nextResolve(pathToFileURL(candidate).href, context);
          }
        }
        return nextResolve(specifier, context);
      }
      return nextResolve(specifier, { ...context, parentURL: depsParent });
    },
    load(url, context, nextLoad) {
      if (url.startsWith(root) && url.endsWith('.js')) return nextLoad(url, { ...context, format: 'module' });
      return nextLoad(url, context);
    },
  });
}

const isDirectory = (p: string): boolean => statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;

function specFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.js')) out.push(join(d, e.name));
    }
  };
  walk(dir);
  return out;
}

interface CypressJson {
  env?: Record<string, unknown>;
  timeouts?: { defaultCommandTimeout?: number };
  defaultCommandTimeout?: number;
}

async function runSuite(): Promise<number> {
  checkInstalled();
  const cypressDir = join(hydra, 'cypress');
  const config = JSON.parse(readFileSync(join(hydra, 'cypress.json'), 'utf8')) as CypressJson;
  const specs = specFiles(join(cypressDir, 'integration')).filter(
    (f) => !args.spec?.length || args.spec.some((s) => relative(cypressDir, f).includes(s)),
  );
  if (specs.length === 0) throw new Error('no spec file matched');
  const variant = args.jwt ? 'jwt' : 'default';
  const logDir = join(REPO, 'test-artifacts/hydra-e2e', variant);
  mkdirSync(logDir, { recursive: true });
  const specLog: string[] = [];

  registerSpecLoader(cypressDir);
  const stack = await startStack({
    hydra,
    appModules: rpModules,
    jwt: args.jwt,
    databaseUrl: args['database-url'] ?? process.env.DATABASE_URL,
    logDir,
  });
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    void stack.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const browser = await chromium.launch({
    executablePath: process.env.GATEHOUSE_CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const totals = { passed: 0, failed: 0, skipped: 0 };
  try {
    const specRequire = createRequire(join(specModules, 'package.json'));
    const chai = specRequire('chai') as { expect: (v: unknown, m?: string) => Record<string, unknown> };
    const runtime = new CypressRuntime({
      env: {
        ...config.env,
        public_url: stack.publicUrl,
        admin_url: stack.adminUrl,
        consent_url: stack.consentUrl,
        client_url: stack.clientUrl,
        public_port: String(stack.ports.public),
        client_port: String(stack.ports.client),
        // circle-ci.bash --jwt: CYPRESS_jwt_enabled=true
        jwt_enabled: args.jwt,
      },
      commandTimeout: config.timeouts?.defaultCommandTimeout ?? config.defaultCommandTimeout ?? 10_000,
      responseTimeout: 30_000,
      pageLoadTimeout: 60_000,
      retries: Number(args.retries),
      testTimeout: 180_000,
      expect: chai.expect,
      log: (line) => specLog.push(line),
    });
    const spy = (...a: unknown[]) => specLog.push(a.map((x) => (typeof x === 'string' ? x : safeJson(x))).join(' '));
    Object.assign(globalThis, runtime.globals(), { require: specRequire });
    const support = join(cypressDir, 'support/index.js');
    const original = {
      log: console.log,
      info: console.info,
      warn: console.warn,
      error: console.error,
      debug: console.debug,
    };
    const quiet = () => Object.assign(console, { log: spy, info: spy, warn: spy, error: spy, debug: spy });
    const loud = () => Object.assign(console, original);
    if (existsSync(support)) await import(pathToFileURL(support).href);

    for (const file of specs) {
      if (interrupted) break;
      const name = relative(join(cypressDir, 'integration'), file).replace(/\.js$/, '');
      specLog.push(`\n===== ${name}`);
      const context = await browser.newContext();
      const page = await context.newPage();
      let results: TestResult[];
      quiet();
      try {
        await import(pathToFileURL(file).href);
        results = await runtime.run(context, page);
      } catch (e) {
        results = [{ title: '(spec file)', state: 'failed', error: String(e), attempts: 0, ms: 0 }];
      } finally {
        loud();
        await context.close();
      }
      const count = (s: TestResult['state']) => results.filter((r) => r.state === s).length;
      const line = { passed: count('passed'), failed: count('failed'), skipped: count('skipped') };
      totals.passed += line.passed;
      totals.failed += line.failed;
      totals.skipped += line.skipped;
      console.log(`${name}: ${line.passed} passed, ${line.failed} failed, ${line.skipped} skipped`);
      for (const r of results) {
        specLog.push(`${r.state.padEnd(7)} ${r.title} (${r.ms} ms${r.attempts > 1 ? `, ${r.attempts} attempts` : ''})`);
        if (r.state === 'failed') {
          specLog.push(`        ${r.error}`);
          console.log(`  ✗ ${r.title}\n      ${String(r.error).split('\n').slice(0, 6).join('\n      ')}`);
        }
      }
    }
  } finally {
    await browser.close().catch(() => {});
    await stack.stop();
    writeFileSync(join(logDir, 'specs.log'), `${specLog.join('\n')}\n`);
  }
  console.log(
    `total (${variant}): ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped` +
      ` — logs in ${relative(process.cwd(), logDir) || '.'}`,
  );
  return totals.failed > 0 ? 1 : 0;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

if (positionals[0] === 'install') {
  install();
} else if (positionals.length > 0) {
  console.error(`unknown command ${positionals[0]}`);
  process.exit(2);
} else {
  process.exitCode = await runSuite().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    return 1;
  });
}
