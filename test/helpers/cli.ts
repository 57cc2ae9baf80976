/** Runs the real CLI (`node src/cli/index.ts …`) in a child process with a clean environment. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI = resolve(import.meta.dirname, '../../src/cli/index.ts');

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
