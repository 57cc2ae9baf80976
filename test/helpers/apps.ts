/**
 * Boots the real public and admin apps on loopback ports, on a per-test-file database, with test
 * configuration. `overrides` are config key paths (`'oauth2.pkce.enforced': true`).
 */
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import type { Runner, TaskList } from 'graphile-worker';
import { type Container, createContainer } from '../../src/container.ts';
import type { Clock } from '../../src/core/clock.ts';
import { loadConfig } from '../../src/core/config/load.ts';
import { loadTaskList, startWorker, type WorkerLane } from '../../src/core/jobs/runner.ts';
import { createLogger, type Logger } from '../../src/core/log.ts';
import type { Resolver, SafeFetchOptions } from '../../src/core/safe-fetch.ts';
import { type Serving, serve } from '../../src/server.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { recordCredentials, suiteLogger } from './ledger.ts';

export const TEST_SECRET = 'test-system-secret-0123456789abcdef';

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

/** Collects JSON log lines in memory (for tests that check what is logged). */
export class LogCapture {
  readonly lines: string[] = [];
  readonly stream = new Writable({
    write: (chunk, _enc, cb) => {
      for (const l of String(chunk).split('\n')) if (l.trim()) this.lines.push(l);
      cb();
    },
  });
  entries(): Array<Record<string, unknown>> {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
  logger(level = 'debug'): Logger {
    return createLogger({ level, destination: this.stream as never });
  }
}

export interface TestServer {
  publicUrl: string;
  adminUrl: string;
  container: Container;
  database: TestDatabase;
  serving: Serving;
  /** Starts a worker in this process over tasks/ (or the given task list). */
  startWorker(opts?: {
    taskList?: TaskList;
    crontab?: string;
    concurrency?: number;
    /** Tasks in job slots of their own (as `gatehouse worker` runs the webhook senders); none by default. */
    lanes?: WorkerLane[];
    livenessIntervalMs?: number;
  }): Promise<Runner>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  overrides?: Record<string, unknown>;
  log?: Logger;
  database?: TestDatabase;
  /** A clock for the container (e.g. `manualClock()` from src/core/clock.ts); the system clock otherwise. */
  clock?: Clock;
  /** DNS seam of the container's outbound clients (`container.fetch`). */
  resolver?: Resolver;
  /** Extra options of the container's outbound clients (e.g. `ca` for a loopback https server). */
  fetchOptions?: Partial<SafeFetchOptions>;
  /** Serve the public listener over TLS with this certificate (`publicUrl` and the issuer are then https). */
  publicTls?: { cert: string; key: string };
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const database = opts.database ?? (await createTestDatabase());
  // freePort() only finds a port that was free a moment ago: another test file may take it before
  // the listener opens. The ports are in the configuration (the issuer URL), so a taken one means
  // a fresh configuration and container.
  const publicScheme = opts.publicTls ? 'https' : 'http';
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  const tls = opts.publicTls
    ? {
        'serve.public.tls.cert.base64': b64(opts.publicTls.cert),
        'serve.public.tls.key.base64': b64(opts.publicTls.key),
      }
    : {};
  const start = async () => {
    const [pub, adm] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {},
      overrides: {
        dsn: database.url,
        dev: true,
        'secrets.system': [TEST_SECRET],
        'serve.public.port': pub,
        'serve.admin.port': adm,
        'serve.public.host': '127.0.0.1',
        'serve.admin.host': '127.0.0.1',
        'urls.self.issuer': `${publicScheme}://127.0.0.1:${pub}/`,
        'urls.self.admin': `http://127.0.0.1:${adm}/`,
        'log.level': 'warn',
        'worker.poll_interval': '100ms',
        ...tls,
        ...opts.overrides,
      },
    });
    const container = await createContainer({
      config,
      // Without a logger of the test's own, the server logs to the run's log files (test/helpers/ledger.ts).
      log: opts.log ?? suiteLogger() ?? createLogger({ level: 'silent' }),
      databaseUrl: database.url,
      autoMigrate: false,
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.resolver ? { resolver: opts.resolver } : {}),
      ...(opts.fetchOptions ? { fetchOptions: opts.fetchOptions } : {}),
    });
    try {
      const serving = await serve(container, 'all');
      for (const l of [serving.public, serving.admin]) if (l) recordCredentials(l.server);
      return { pub, adm, container, serving };
    } catch (e) {
      await container.close();
      throw e;
    }
  };
  let started: Awaited<ReturnType<typeof start>> | undefined;
  for (let attempt = 1; !started; attempt++) {
    try {
      started = await start();
    } catch (e) {
      if ((e as { code?: string }).code !== 'EADDRINUSE' || attempt >= 5) throw e;
    }
  }
  const { pub, adm, container, serving } = started;
  const runners: Runner[] = [];
  return {
    publicUrl: `${publicScheme}://127.0.0.1:${pub}`,
    adminUrl: `http://127.0.0.1:${adm}`,
    container,
    database,
    serving,
    async startWorker(w = {}) {
      const runner = await startWorker({
        pool: container.pool,
        log: container.log,
        concurrency: w.concurrency ?? 2,
        ...(w.lanes ? { lanes: w.lanes } : {}),
        pollInterval: 100,
        taskList: w.taskList ?? (await loadTaskList(container)),
        livenessIntervalMs: w.livenessIntervalMs ?? 1000,
        ...(w.crontab !== undefined ? { crontab: w.crontab } : {}),
      });
      runners.push(runner);
      return runner;
    },
    async close() {
      await serving.close(1000);
      for (const r of runners) await r.stop().catch(() => {});
      await container.close();
      if (!opts.database) await database.drop();
    },
  };
}

/** Polls `fn` until it returns a truthy value or the deadline passes (no fixed sleeps in tests). */
export async function eventually<T>(
  fn: () => Promise<T | undefined | false | null>,
  timeoutMs = 10_000,
  stepMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * Runs a write made behind the services' back (SQL straight into a table whose rows a process keeps
 * in memory) and waits until this process was notified of it, as every process is (a trigger sends
 * NOTIFY gatehouse_changes; see src/core/db/changes.ts). Nothing to wait for while it does not listen.
 */
export async function whenNotified<T>(t: TestServer, topic: 'client' | 'jwk', write: () => Promise<T>): Promise<T> {
  const feed = t.container.changes;
  const live = feed.live();
  const before = feed.version(topic);
  const value = await write();
  if (live) await eventually(async () => feed.version(topic) !== before, 5000, 5);
  return value;
}
