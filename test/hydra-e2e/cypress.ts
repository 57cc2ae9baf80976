/**
 * The part of Cypress 9 (and of the Mocha it embeds) that Ory Hydra's end-to-end specs use, on top
 * of playwright-core: `describe/it/before/after/beforeEach/afterEach`, `this.skip()`, `cy.*`
 * commands queued and run after the test function returns (callbacks that queue commands run them
 * before the next command, as Cypress nests them), `.should` retrying its query chain until the
 * assertion passes, `Cypress.env`, `Cypress.Commands.add`, `Cypress.Cookies.preserveOnce` and
 * Cypress's clearing of cookies before each test. Spec files run unmodified, in Node: the code
 * Cypress runs in the browser only queues commands, and Node has what it calls besides (fetch,
 * crypto.subtle, Buffer).
 *
 * `cy.request` behaves as Cypress's: sent from outside the browser with the browser's cookies and
 * user agent and no Origin; an object body as JSON, `form: true` as a form, a string as it is with
 * no Content-Type; GET redirects followed, cookies of every hop stored in the browser.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { BrowserContext, Locator, Page } from 'playwright-core';

type Fn = (...args: unknown[]) => unknown;
type Expect = (value: unknown, message?: string) => Record<string, unknown>;

export interface CypressOptions {
  env: Record<string, unknown>;
  /** Cypress's defaultCommandTimeout (ms). */
  commandTimeout: number;
  /** Cypress's responseTimeout, for cy.request (ms). */
  responseTimeout: number;
  pageLoadTimeout: number;
  /** Failed tests are run again up to this many times (Cypress's `retries`). */
  retries: number;
  /** Upper bound of one test (hooks included), so that a hung command cannot stall the run. */
  testTimeout: number;
  expect: Expect;
  /** Where the specs' console output goes. */
  log: (line: string) => void;
}

export interface TestResult {
  title: string;
  state: 'passed' | 'failed' | 'skipped';
  error?: string;
  attempts: number;
  ms: number;
}

// ---------------------------------------------------------------- the Mocha tree

interface Hook {
  kind: 'before' | 'after' | 'beforeEach' | 'afterEach';
  fn: Fn;
}
interface Test {
  title: string;
  fn: Fn | undefined;
  suite: Suite;
  /** Registered while another test ran: Mocha adds it to a suite that has already run, so it never runs. */
  late: boolean;
}
interface Suite {
  title: string;
  parent: Suite | undefined;
  tests: Test[];
  suites: Suite[];
  hooks: Hook[];
  skip: boolean;
}

const newSuite = (title: string, parent: Suite | undefined): Suite => ({
  title,
  parent,
  tests: [],
  suites: [],
  hooks: [],
  skip: false,
});

class Pending extends Error {
  constructor() {
    super('skipped');
  }
}

const fullTitle = (s: Suite | undefined, title: string): string => {
  const parts = [title];
  for (let p = s; p?.parent; p = p.parent) parts.unshift(p.title);
  return parts.join(' > ');
};

function allTests(s: Suite): Test[] {
  return [...s.tests, ...s.suites.flatMap(allTests)];
}

// ---------------------------------------------------------------- the command queue

class Command {
  subject: unknown;
  readonly name: string;
  readonly parent: Command | undefined;
  readonly exec: (prev: unknown) => Promise<unknown>;
  /** Re-runnable without waiting: `.should` runs the chain of queries again until it passes. */
  readonly query: ((prev: unknown) => Promise<unknown>) | undefined;
  constructor(
    name: string,
    parent: Command | undefined,
    exec: (prev: unknown) => Promise<unknown>,
    query?: (prev: unknown) => Promise<unknown>,
  ) {
    this.name = name;
    this.parent = parent;
    this.exec = exec;
    this.query = query;
  }
}

class Queue {
  readonly commands: Command[] = [];
}

const CHAINER = Symbol('chainer');
interface Chainer {
  [CHAINER]: Command;
  [method: string]: unknown;
}
const isChainer = (v: unknown): v is Chainer => typeof v === 'object' && v !== null && CHAINER in v;
const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  (typeof v === 'object' || typeof v === 'function') &&
  v !== null &&
  typeof (v as { then?: unknown }).then === 'function';

/** A `cy.get` subject: a lazy locator (what Cypress yields as a jQuery collection). */
class CyElement {
  readonly locator: Locator;
  readonly selector: string;
  constructor(locator: Locator, selector: string) {
    this.locator = locator;
    this.selector = selector;
  }
  async text(): Promise<string> {
    return (await this.locator.allTextContents()).join('');
  }
  get length(): Promise<number> {
    return this.locator.count();
  }
}

class CommandError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const HTTP_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'COPY', 'LOCK']);

interface RequestOptions {
  method?: string;
  url?: string;
  body?: unknown;
  form?: boolean;
  headers?: Record<string, string>;
  failOnStatusCode?: boolean;
  followRedirect?: boolean;
  timeout?: number;
}

interface CyResponse {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  duration: number;
  isOkStatusCode: boolean;
  redirects: string[];
  redirectedToUrl?: string;
}

// ---------------------------------------------------------------- cookies

interface SetCookie {
  name: string;
  value: string;
  domain: string;
  path: string;
  expires: number;
  httpOnly: boolean;
  secure: boolean;
  sameSite: 'Strict' | 'Lax' | 'None';
  remove: boolean;
}

/** One Set-Cookie header as RFC 6265 reads it, in the shape Playwright stores. */
function parseSetCookie(header: string, url: URL): SetCookie | undefined {
  const [pair = '', ...attrs] = header.split(';');
  const eq = pair.indexOf('=');
  if (eq <= 0) return undefined;
  const c: SetCookie = {
    name: pair.slice(0, eq).trim(),
    value: pair.slice(eq + 1).trim(),
    domain: url.hostname,
    path: url.pathname.slice(0, Math.max(1, url.pathname.lastIndexOf('/'))) || '/',
    expires: -1,
    httpOnly: false,
    secure: false,
    sameSite: 'Lax',
    remove: false,
  };
  let maxAge: number | undefined;
  for (const attr of attrs) {
    const i = attr.indexOf('=');
    const key = (i < 0 ? attr : attr.slice(0, i)).trim().toLowerCase();
    const val = i < 0 ? '' : attr.slice(i + 1).trim();
    if (key === 'path' && val.startsWith('/')) c.path = val;
    else if (key === 'domain' && val) c.domain = `.${val.replace(/^\./, '')}`;
    else if (key === 'expires') {
      const t = Date.parse(val);
      if (!Number.isNaN(t)) c.expires = t / 1000;
    } else if (key === 'max-age') maxAge = Number(val);
    else if (key === 'httponly') c.httpOnly = true;
    else if (key === 'secure') c.secure = true;
    else if (key === 'samesite') {
      const v = val.toLowerCase();
      c.sameSite = v === 'strict' ? 'Strict' : v === 'none' ? 'None' : 'Lax';
    }
  }
  if (maxAge !== undefined && !Number.isNaN(maxAge)) c.expires = Date.now() / 1000 + maxAge;
  if (c.expires !== -1 && c.expires * 1000 <= Date.now()) c.remove = true;
  if (c.domain.startsWith('.') && /^[\d.]+$|:/.test(c.domain.slice(1))) c.domain = c.domain.slice(1);
  return c;
}

// ---------------------------------------------------------------- the runtime

export class CypressRuntime {
  private active: Queue | undefined;
  private root = newSuite('', undefined);
  private collecting: Suite | undefined;
  private running = false;
  private preserved = new Set<string>();
  private page!: Page;
  private context!: BrowserContext;
  private currentError: unknown;
  readonly commands: Record<string, Fn> = {};
  private readonly opts: CypressOptions;

  constructor(opts: CypressOptions) {
    this.opts = opts;
  }

  /** The globals a spec file sees: describe/it/hooks, cy, Cypress, expect. */
  globals(): Record<string, unknown> {
    const describe = (title: string, fn: Fn) => this.describe(title, fn, false);
    describe.skip = (title: string, fn: Fn) => this.describe(title, fn, true);
    describe.only = describe;
    const it = (title: string, fn?: Fn) => this.it(title, fn);
    it.skip = (title: string) => this.it(title, undefined);
    it.only = it;
    const hook = (kind: Hook['kind']) => (fn: Fn) => {
      (this.collecting ?? this.root).hooks.push({ kind, fn });
    };
    return {
      describe,
      context: describe,
      it,
      specify: it,
      before: hook('before'),
      after: hook('after'),
      beforeEach: hook('beforeEach'),
      afterEach: hook('afterEach'),
      cy: this.cy(),
      Cypress: this.cypress(),
      expect: this.opts.expect,
      assert: this.opts.expect,
    };
  }

  private describe(title: string, fn: Fn, skip: boolean) {
    const parent = this.collecting ?? this.root;
    const s = newSuite(title, parent);
    s.skip = skip || parent.skip;
    parent.suites.push(s);
    this.collecting = s;
    try {
      fn.call({});
    } finally {
      this.collecting = parent;
    }
  }

  private it(title: string, fn: Fn | undefined) {
    const suite = this.collecting ?? this.root;
    suite.tests.push({ title, fn, suite, late: this.running });
  }

  // -------------------------------------------------------------- running

  /** Runs the tests collected so far in `context`; the tree is emptied for the next spec file. */
  async run(context: BrowserContext, page: Page): Promise<TestResult[]> {
    this.context = context;
    this.page = page;
    this.preserved.clear();
    const root = this.root;
    this.collecting = undefined;
    this.running = true;
    const results: TestResult[] = [];
    try {
      await this.runSuite(root, false, results);
      // Tests that were registered by `it` inside a running test: Mocha never runs them.
      for (const t of allTests(root)) {
        if (t.late) results.push({ title: fullTitle(t.suite, t.title), state: 'skipped', attempts: 0, ms: 0 });
      }
    } finally {
      this.running = false;
      this.root = newSuite('', undefined);
    }
    return results;
  }

  private async runSuite(suite: Suite, skipped: boolean, results: TestResult[]): Promise<void> {
    const tests = allTests(suite).filter((t) => !t.late);
    if (tests.length === 0) return;
    let skip = skipped || suite.skip;
    let hookError: string | undefined;
    const befores = suite.hooks.filter((h) => h.kind === 'before');
    let ranBefore = false;
    if (!skip) {
      ranBefore = true;
      for (const h of befores) {
        const r = await this.runBlock(h.fn, `"before all" hook`);
        if (r === 'pending') {
          skip = true;
          break;
        }
        if (r) {
          hookError = `"before all" hook: ${r}`;
          break;
        }
      }
    }
    const own = suite.tests.filter((t) => !t.late);
    for (const t of own) {
      if (skip || !t.fn) {
        results.push({ title: fullTitle(suite, t.title), state: 'skipped', attempts: 0, ms: 0 });
      } else if (hookError) {
        results.push({ title: fullTitle(suite, t.title), state: 'failed', error: hookError, attempts: 0, ms: 0 });
        hookError = 'skipped: an earlier "before all" hook failed';
      } else {
        results.push(await this.runTest(t));
      }
    }
    for (const child of suite.suites) {
      if (hookError) {
        for (const t of allTests(child).filter((x) => !x.late)) {
          results.push({ title: fullTitle(t.suite, t.title), state: 'failed', error: hookError, attempts: 0, ms: 0 });
          hookError = 'skipped: an earlier "before all" hook failed';
        }
        continue;
      }
      await this.runSuite(child, skip, results);
    }
    if (ranBefore) {
      for (const h of suite.hooks.filter((x) => x.kind === 'after')) {
        const r = await this.runBlock(h.fn, `"after all" hook`);
        if (r && r !== 'pending') {
          const last = results.at(-1);
          if (last && last.state === 'passed')
            Object.assign(last, { state: 'failed', error: `"after all" hook: ${r}` });
        }
      }
    }
  }

  private async runTest(t: Test): Promise<TestResult> {
    const title = fullTitle(t.suite, t.title);
    const started = Date.now();
    let error: string | undefined;
    let attempts = 0;
    for (let attempt = 0; attempt <= this.opts.retries; attempt++) {
      attempts++;
      error = undefined;
      await this.clearCookiesBeforeTest();
      const chain: Suite[] = [];
      for (let s: Suite | undefined = t.suite; s; s = s.parent) chain.unshift(s);
      const r = await this.withTimeout(async () => {
        for (const s of chain) {
          for (const h of s.hooks.filter((x) => x.kind === 'beforeEach')) {
            const e = await this.runBlock(h.fn, '"before each" hook');
            if (e) return e === 'pending' ? e : `"before each" hook: ${e}`;
          }
        }
        const e = await this.runBlock(t.fn as Fn, 'test');
        for (const s of [...chain].reverse()) {
          for (const h of s.hooks.filter((x) => x.kind === 'afterEach')) {
            const ae = await this.runBlock(h.fn, '"after each" hook');
            if (ae && !e) return `"after each" hook: ${ae}`;
          }
        }
        return e;
      });
      if (r === 'pending') return { title, state: 'skipped', attempts, ms: Date.now() - started };
      error = r;
      if (!error) break;
    }
    return error
      ? { title, state: 'failed', error, attempts, ms: Date.now() - started }
      : { title, state: 'passed', attempts, ms: Date.now() - started };
  }

  private async withTimeout(body: () => Promise<string | undefined>): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`timed out after ${this.opts.testTimeout} ms`), this.opts.testTimeout);
    });
    try {
      return await Promise.race([body(), limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs a test or hook function and then the commands it queued; the error message, 'pending', or undefined. */
  private async runBlock(fn: Fn, _what: string): Promise<string | undefined> {
    const queue = new Queue();
    const ctx = {
      skip: () => {
        throw new Pending();
      },
      timeout: () => ctx,
      retries: () => ctx,
    };
    this.currentError = undefined;
    const onRejection = (e: unknown) => {
      this.currentError ??= e;
    };
    process.on('unhandledRejection', onRejection);
    try {
      this.active = queue;
      let ret: unknown;
      try {
        ret = fn.call(ctx);
      } finally {
        this.active = undefined;
      }
      if (!isChainer(ret) && isThenable(ret)) await ret;
      await this.runQueue(queue);
      // An error raised in a callback nobody awaited (a rejected promise Cypress would report).
      await sleep(0);
      if (this.currentError) throw this.currentError;
      return undefined;
    } catch (e) {
      if (e instanceof Pending) return 'pending';
      return describeError(e);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  }

  private async runQueue(queue: Queue): Promise<unknown> {
    let last: unknown;
    for (let i = 0; i < queue.commands.length; i++) {
      const cmd = queue.commands[i] as Command;
      cmd.subject = await cmd.exec(cmd.parent?.subject);
      last = cmd.subject;
    }
    return last;
  }

  /** Calls a callback with a queue of its own; commands it queued run before the next command. */
  private async callback(fn: Fn, thisArg: unknown, args: unknown[], subject: unknown): Promise<unknown> {
    const queue = new Queue();
    const outer = this.active;
    this.active = queue;
    let ret: unknown;
    try {
      ret = fn.apply(thisArg, args);
    } finally {
      this.active = outer;
    }
    if (!isChainer(ret) && isThenable(ret)) ret = await ret;
    let last: unknown;
    if (queue.commands.length > 0) last = await this.runQueue(queue);
    if (isChainer(ret)) return ret[CHAINER].subject;
    if (ret !== undefined) return ret;
    return queue.commands.length > 0 ? last : subject;
  }

  private enqueue(
    name: string,
    parent: Command | undefined,
    exec: (prev: unknown) => Promise<unknown>,
    query?: (prev: unknown) => Promise<unknown>,
  ): Chainer {
    if (!this.active) throw new Error(`cy.${name}() was called outside a running test or hook`);
    const cmd = new Command(name, parent, exec, query);
    this.active.commands.push(cmd);
    return this.chainer(cmd);
  }

  private async recompute(cmd: Command | undefined): Promise<unknown> {
    if (!cmd) return undefined;
    if (!cmd.query) return cmd.subject;
    return cmd.query(await this.recompute(cmd.parent));
  }

  /** Polls `check` until it returns something other than undefined, or fails after the command timeout. */
  private async poll<T>(
    what: string,
    check: () => Promise<T | undefined>,
    timeout = this.opts.commandTimeout,
  ): Promise<T> {
    const deadline = Date.now() + timeout;
    let lastError: unknown;
    for (;;) {
      try {
        const v = await check();
        if (v !== undefined) return v;
      } catch (e) {
        lastError = e;
      }
      if (Date.now() > deadline) {
        throw new CommandError(
          `Timed out retrying after ${timeout}ms: ${what}${lastError ? ` (${describeError(lastError)})` : ''}`,
        );
      }
      await sleep(50);
    }
  }

  // -------------------------------------------------------------- chainers and commands

  private chainer(cmd: Command): Chainer {
    const child = (
      name: string,
      exec: (prev: unknown) => Promise<unknown>,
      query?: (prev: unknown) => Promise<unknown>,
    ) => this.enqueue(name, cmd, exec, query);
    const c: Chainer = {
      [CHAINER]: cmd,
      // biome-ignore lint/suspicious/noThenProperty: Cypress chainers have `.then`; they are not awaited (isChainer comes first).
      then: (fn: Fn) => child('then', (prev) => this.callback(fn, undefined, [prev], prev)),
      should: (...args: unknown[]) => child('should', (prev) => this.should(cmd, prev, args)),
      and: (...args: unknown[]) => child('and', (prev) => this.should(cmd, prev, args)),
      its: (path: string) => {
        const query = async (prev: unknown) =>
          String(path)
            .split('.')
            .reduce<unknown>(
              (v, k) => (v === null || v === undefined ? undefined : (v as Record<string, unknown>)[k]),
              prev,
            );
        return child(
          'its',
          (prev) =>
            this.poll(`its('${path}')`, async () => {
              const v = await query(prev);
              return v === undefined ? undefined : { v };
            }).then((r) => r.v),
          query,
        );
      },
      invoke: (method: string, ...args: unknown[]) => {
        const query = async (prev: unknown) => {
          const f = (prev as Record<string, unknown> | undefined)?.[method];
          if (typeof f !== 'function') throw new CommandError(`invoke('${method}'): not a function of the subject`);
          return await (f as Fn).apply(prev, args);
        };
        return child('invoke', query, query);
      },
      click: () =>
        child('click', async (prev) => {
          const el = this.element(prev, 'click');
          await el.locator.first().click({ timeout: this.opts.commandTimeout });
          return prev;
        }),
      type: (text: string) =>
        child('type', async (prev) => {
          const el = this.element(prev, 'type');
          await el.locator.first().pressSequentially(String(text), { timeout: this.opts.commandTimeout });
          return prev;
        }),
      as: () => c,
    };
    for (const [name, fn] of Object.entries(this.commands)) {
      c[name] = (...args: unknown[]) => child(name, () => this.callback(fn, undefined, args, undefined));
    }
    return c;
  }

  private element(subject: unknown, command: string): CyElement {
    if (!(subject instanceof CyElement)) throw new CommandError(`.${command}() needs a DOM element subject`);
    return subject;
  }

  private async should(parent: Command, prev: unknown, args: unknown[]): Promise<unknown> {
    const [first, ...rest] = args;
    if (typeof first === 'function') {
      let subject = prev;
      const deadline = Date.now() + this.opts.commandTimeout;
      for (;;) {
        const queue = new Queue();
        const outer = this.active;
        this.active = queue;
        try {
          (first as Fn)(subject);
        } catch (e) {
          if (Date.now() > deadline) throw e;
          await sleep(50);
          subject = await this.recompute(parent);
          continue;
        } finally {
          this.active = outer;
        }
        // Cypress 9 ran commands queued inside a `.should` callback (Hydra's createClient helper does).
        if (queue.commands.length > 0) await this.runQueue(queue);
        return subject;
      }
    }
    const chain = String(first);
    let subject = prev;
    const deadline = Date.now() + this.opts.commandTimeout;
    for (;;) {
      try {
        await this.assert(subject, chain, rest);
        return subject;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await sleep(50);
        subject = await this.recompute(parent);
      }
    }
  }

  /** A chai chainer string (`'contain'`, `'not.be.empty'`, …) applied to the subject; elements compare by text. */
  private async assert(subject: unknown, chain: string, args: unknown[]): Promise<void> {
    let value = subject;
    if (subject instanceof CyElement) {
      const bare = chain.replace(/^(not\.|to\.|have\.|be\.)+/, '');
      if (['contain', 'include', 'contain.text', 'include.text', 'text'].includes(bare)) {
        value = await subject.text();
        chain = chain.replace(/\.text$|^have\.text$/, (m) => (m === 'have.text' ? 'equal' : ''));
      } else if (bare === 'exist' || bare === 'be.visible' || bare === 'visible') {
        value = (await subject.locator.count()) > 0 ? subject : undefined;
        chain = chain.replace(/(be\.)?visible$|exist$/, 'exist');
      }
    }
    let target: unknown = this.opts.expect(value).to;
    const parts = chain.split('.').filter(Boolean);
    for (let i = 0; i < parts.length; i++) {
      const next = (target as Record<string, unknown>)[parts[i] as string];
      target = i === parts.length - 1 && typeof next === 'function' ? (next as Fn).apply(target, args) : next;
    }
  }

  private cy(): Record<string, unknown> {
    const parent = (
      name: string,
      exec: (prev: unknown) => Promise<unknown>,
      query?: (prev: unknown) => Promise<unknown>,
    ) => this.enqueue(name, undefined, exec, query);
    const cy: Record<string, unknown> = {
      visit: (url: string, options: { failOnStatusCode?: boolean; timeout?: number } = {}) =>
        parent('visit', async () => {
          const res = await this.page.goto(String(url), {
            waitUntil: 'load',
            timeout: options.timeout ?? this.opts.pageLoadTimeout,
          });
          const status = res?.status() ?? 200;
          if (options.failOnStatusCode !== false && status >= 400) {
            throw new CommandError(`cy.visit() failed: ${url} answered ${status}`);
          }
          return undefined;
        }),
      get: (selector: string) => {
        const query = async () => new CyElement(this.page.locator(String(selector)), String(selector));
        return parent(
          'get',
          () =>
            this.poll(`expected to find element: ${selector}`, async () => {
              const el = await query();
              return (await el.locator.count()) > 0 ? el : undefined;
            }),
          query,
        );
      },
      contains: (text: string) => {
        const query = async () => new CyElement(this.page.locator('body'), 'body');
        return parent(
          'contains',
          () =>
            this.poll(`expected to find content: ${text}`, async () => {
              const content = String(await this.page.evaluate('document.documentElement?.textContent ?? ""'));
              return content.includes(String(text)) ? query() : undefined;
            }),
          query,
        );
      },
      location: (key?: string) => {
        const query = async () => {
          const u = new URL(this.page.url());
          const loc: Record<string, string> = {
            hash: u.hash,
            host: u.host,
            hostname: u.hostname,
            href: u.href,
            origin: u.origin,
            pathname: u.pathname,
            port: u.port,
            protocol: u.protocol,
            search: u.search,
          };
          return key === undefined ? loc : loc[key];
        };
        return parent('location', query, query);
      },
      url: () => {
        const query = async () => this.page.url();
        return parent('url', query, query);
      },
      window: () =>
        parent('window', async () => {
          const page = this.page;
          return {
            open: (url: unknown, target?: string) =>
              page.evaluate(`void window.open(${JSON.stringify(String(url))}, ${JSON.stringify(target ?? '_blank')})`),
            get location() {
              return new URL(page.url());
            },
          };
        }),
      request: (...args: unknown[]) => parent('request', () => this.request(args)),
      wrap: (value: unknown) => parent('wrap', async () => (isThenable(value) ? await value : value)),
      wait: (ms: number) => parent('wait', async () => sleep(Number(ms))),
      clearCookies: () =>
        parent('clearCookies', async () => {
          await this.context.clearCookies();
          return null;
        }),
      getCookies: () => parent('getCookies', async () => this.context.cookies()),
      log: (...args: unknown[]) => parent('log', async () => this.opts.log(args.map(String).join(' '))),
    };
    const self = this;
    return new Proxy(cy, {
      get(target, prop: string) {
        if (prop in target) return target[prop];
        const custom = self.commands[prop];
        if (custom)
          return (...args: unknown[]) => parent(prop, () => self.callback(custom, undefined, args, undefined));
        return undefined;
      },
    });
  }

  private cypress(): Record<string, unknown> {
    return {
      env: (key?: string) => (key === undefined ? this.opts.env : this.opts.env[key]),
      Commands: {
        add: (name: string, fn: Fn) => {
          this.commands[name] = fn;
        },
        overwrite: (name: string) => {
          throw new Error(`Cypress.Commands.overwrite('${name}') is not part of this runner`);
        },
      },
      Cookies: {
        preserveOnce: (...names: string[]) => {
          for (const n of names) this.preserved.add(n);
        },
        defaults: () => undefined,
      },
      config: () => ({}),
    };
  }

  /** Cypress clears every cookie before each test, except those `Cypress.Cookies.preserveOnce` named in the last one. */
  private async clearCookiesBeforeTest(): Promise<void> {
    const keep = (await this.context.cookies()).filter((c) => this.preserved.has(c.name));
    this.preserved.clear();
    await this.context.clearCookies();
    if (keep.length > 0) await this.context.addCookies(keep);
  }

  // -------------------------------------------------------------- cy.request

  private async request(args: unknown[]): Promise<CyResponse> {
    let o: RequestOptions;
    const [a, b, c] = args;
    if (typeof a === 'object' && a !== null) o = { ...(a as RequestOptions) };
    else if (args.length >= 2 && typeof a === 'string' && HTTP_METHODS.has(a.toUpperCase()) && typeof b === 'string') {
      o = { method: a, url: b, ...(args.length >= 3 ? { body: c } : {}) };
    } else o = { url: String(a), ...(args.length >= 2 ? { body: b } : {}) };
    const method = (o.method ?? 'GET').toUpperCase();
    if (!o.url) throw new CommandError('cy.request() needs a url');
    const headers: Record<string, string> = {
      'user-agent': await this.page.evaluate(() => navigator.userAgent),
      accept: '*/*',
      'accept-encoding': 'gzip, deflate',
    };
    for (const [k, v] of Object.entries(o.headers ?? {})) headers[k.toLowerCase()] = String(v);
    let body: Buffer | undefined;
    if (o.body !== undefined && o.body !== null) {
      if (o.form) {
        body = Buffer.from(
          typeof o.body === 'string'
            ? o.body
            : new URLSearchParams(
                Object.entries(o.body as Record<string, unknown>).map(([k, v]): [string, string] => [
                  k,
                  v === undefined ? '' : String(v),
                ]),
              ).toString(),
        );
        headers['content-type'] ??= 'application/x-www-form-urlencoded';
      } else if (typeof o.body === 'string') {
        // Sent as it is: Cypress (through the request library) adds no Content-Type for a string body.
        body = Buffer.from(o.body);
      } else {
        body = Buffer.from(JSON.stringify(o.body));
        headers['content-type'] ??= 'application/json';
      }
    }
    // Cypress sets the request library's `json` option for an object body, which also parses the
    // answer as JSON whatever its Content-Type (Hydra's RP app sends JSON as text/html).
    const json = o.body !== undefined && o.body !== null && typeof o.body === 'object' && !o.form;
    const started = Date.now();
    const redirects: string[] = [];
    let url = new URL(o.url);
    let current = { method, body };
    for (let hop = 0; ; hop++) {
      const res = await this.send(
        url,
        current.method,
        headers,
        current.body,
        o.timeout ?? this.opts.responseTimeout,
        json,
      );
      const location = res.headers.location;
      const follow =
        o.followRedirect !== false && res.status >= 300 && res.status < 400 && location && current.method === 'GET';
      if (follow && hop < 20) {
        const next = new URL(location, url);
        redirects.push(`${res.status}: ${next.href}`);
        url = next;
        current = { method: 'GET', body: undefined };
        continue;
      }
      const response: CyResponse = {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
        body: res.body,
        duration: Date.now() - started,
        isOkStatusCode: res.status >= 200 && res.status < 400,
        redirects,
        ...(redirects.length ? { redirectedToUrl: url.href } : {}),
      };
      this.opts.log(
        `cy.request ${method} ${o.url} → ${res.status}${redirects.length ? ` (via ${redirects.length} redirects)` : ''}: ${(typeof res.body === 'string' ? res.body : JSON.stringify(res.body)).slice(0, 300)}`,
      );
      if (o.failOnStatusCode !== false && !response.isOkStatusCode) {
        throw new CommandError(
          `cy.request() failed on: ${method} ${o.url}\nThe response we received from your web server was: ${res.status} ${res.statusText}\n${typeof res.body === 'string' ? res.body : JSON.stringify(res.body)}`.slice(
            0,
            2000,
          ),
        );
      }
      return response;
    }
  }

  private async send(
    url: URL,
    method: string,
    baseHeaders: Record<string, string>,
    body: Buffer | undefined,
    timeout: number,
    json: boolean,
  ): Promise<{ status: number; statusText: string; headers: IncomingHttpHeaders; body: unknown }> {
    const headers = { ...baseHeaders };
    const cookies = await this.context.cookies(url.href);
    if (cookies.length > 0) headers.cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    if (body) headers['content-length'] = String(body.length);
    const raw = await new Promise<{ status: number; statusText: string; headers: IncomingHttpHeaders; data: Buffer }>(
      (resolve, reject) => {
        const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
          url,
          { method, headers, timeout },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                statusText: res.statusMessage ?? '',
                headers: res.headers,
                data: Buffer.concat(chunks),
              }),
            );
            res.on('error', reject);
          },
        );
        req.on('timeout', () => req.destroy(new CommandError(`cy.request() timed out after ${timeout}ms: ${url}`)));
        req.on('error', reject);
        req.end(body);
      },
    );
    for (const h of [raw.headers['set-cookie'] ?? []].flat()) {
      const c = parseSetCookie(h, url);
      if (!c) continue;
      const { remove, ...cookie } = c;
      if (remove) await this.context.clearCookies({ name: c.name, domain: c.domain, path: c.path });
      else await this.context.addCookies([cookie]);
    }
    const enc = String(raw.headers['content-encoding'] ?? '');
    const data =
      enc === 'gzip'
        ? gunzipSync(raw.data)
        : enc === 'deflate'
          ? inflateSync(raw.data)
          : enc === 'br'
            ? brotliDecompressSync(raw.data)
            : raw.data;
    const text = data.toString('utf8');
    let parsed: unknown = text;
    if (json || /json/i.test(String(raw.headers['content-type'] ?? ''))) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: raw.status, statusText: raw.statusText, headers: raw.headers, body: parsed };
  }
}

function describeError(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}
