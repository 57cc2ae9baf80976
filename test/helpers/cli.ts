/**
 * Runs the real CLI — the `gatehouse` command of package.json's `bin` (bin/gatehouse.mjs, which runs
 * src/ in a checkout) — in a child process with a clean environment.
 */
import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI = resolve(import.meta.dirname, '../../bin/gatehouse.mjs');

/**
 * A `gatehouse worker` process on a database, with the test secret and warn-level logs; `env` adds
 * or overrides settings (poll interval, timeouts).
 */
export function spawnWorker(dsn: string, secret: string, env: Record<string, string>, stdio: StdioOptions = 'ignore') {
  return spawn(process.execPath, [CLI, 'worker'], {
    env: { PATH: process.env.PATH ?? '', DSN: dsn, SECRETS_SYSTEM: secret, LOG_LEVEL: 'warn', ...env },
    stdio,
  });
}

/**
 * Starts `gatehouse perform …` with a client's credentials (OAUTH2_CLIENT_ID/SECRET) and waits for
 * the first match of `pattern` on its stdout (a URL the user must open); its first group is `match`.
 * `exited` is the exit code, `stdout()` what it printed so far, `stop()` ends it; it is killed after
 * `limitMs` in any case.
 */
export async function performUntil(
  args: string[],
  client: { client_id: string; client_secret?: string },
  pattern: RegExp,
  limitMs: number,
) {
  const child = spawn(process.execPath, [CLI, 'perform', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      OAUTH2_CLIENT_ID: client.client_id,
      OAUTH2_CLIENT_SECRET: client.client_secret ?? '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((res) => child.on('exit', res));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const stop = () => {
    clearTimeout(timer);
    child.kill();
  };
  try {
    const match = await new Promise<string>((res, rej) => {
      child.stdout.on('data', (d) => {
        stdout += d;
        const m = pattern.exec(stdout);
        if (m) res(m[1] as string);
      });
      child.on('exit', () => rej(new Error(`CLI exited early: ${stderr}`)));
    });
    return { match, exited, stdout: () => stdout, stop };
  } catch (e) {
    stop();
    throw e;
  }
}

/** Resolves once the process has exited (at once when it already has). */
export const exited = (c: ChildProcess) =>
  new Promise<void>((res) => (c.exitCode !== null || c.signalCode !== null ? res() : c.once('exit', () => res())));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `input`, when given, is written to the command's stdin (else stdin is empty). */
export function runCli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
  input?: string,
): Promise<CliResult> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin?.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rej);
    child.on('exit', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}
