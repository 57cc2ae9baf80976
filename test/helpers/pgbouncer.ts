/**
 * Starts Debian's `pgbouncer` in front of the test PostgreSQL, in transaction pooling mode, on a
 * free loopback port with a generated ini file. `findPgbouncer()` says whether the binary exists
 * (the package is `pgbouncer`; .ci/run installs it).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './apps.ts';

export function findPgbouncer(): string | undefined {
  for (const p of [
    '/usr/sbin/pgbouncer',
    '/usr/bin/pgbouncer',
    '/usr/local/bin/pgbouncer',
    '/usr/local/sbin/pgbouncer',
  ])
    if (existsSync(p)) return p;
  try {
    return execFileSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export interface Bouncer {
  port: number;
  /** `postgres://…@127.0.0.1:<port>/<database>` through the pooler. */
  url(database: string): string;
  log(): string;
  stop(): Promise<void>;
}

const canConnect = (port: number) =>
  new Promise<boolean>((res) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.end();
      res(true);
    });
    s.once('error', () => res(false));
  });

/** PgBouncer in `pool_mode` (transaction by default) to the server of `serverUrl`, any database. */
export async function startPgbouncer(
  bin: string,
  serverUrl: string,
  opts: { poolMode?: 'transaction' | 'session'; poolSize?: number } = {},
): Promise<Bouncer> {
  const server = new URL(serverUrl);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-pgbouncer-'));
  chmodSync(dir, 0o777); // pgbouncer drops root privileges (-u) and must still write its log here
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432} user=${user}${password ? ` password=${password}` : ''}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      // Clients are not authenticated by the pooler here (loopback test); the database line logs in.
      'auth_type = any',
      `pool_mode = ${opts.poolMode ?? 'transaction'}`,
      `default_pool_size = ${opts.poolSize ?? 4}`,
      'max_client_conn = 500',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'ignore_startup_parameters = extra_float_digits,options',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  // PgBouncer refuses to run as root: drop to the postgres (or nobody) user.
  const asRoot = process.getuid?.() === 0;
  const runAs = asRoot ? (userExists('postgres') ? 'postgres' : 'nobody') : undefined;
  const child: ChildProcess = spawn(bin, [...(runAs ? ['-u', runAs] : []), ini], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    url: (database) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`,
    log: () => {
      try {
        return readFileSync(join(dir, 'pgbouncer.log'), 'utf8');
      } catch {
        return '';
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGINT'); // immediate shutdown
        await new Promise<void>((res) => {
          const t = setTimeout(() => {
            child.kill('SIGKILL');
            res();
          }, 3000);
          child.once('exit', () => {
            clearTimeout(t);
            res();
          });
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function userExists(name: string): boolean {
  try {
    return readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .some((l) => l.startsWith(`${name}:`));
  } catch {
    return false;
  }
}
