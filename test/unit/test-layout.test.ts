/**
 * The suite's layout (vitest.config.ts): files that start processes or browsers, or change
 * process-wide state, run each in a fresh worker (ISOLATED_FILES); the rest share reused workers.
 * A file missing from the list would carry its processes or its state into the next file of its
 * worker, which fails (or passes) depending on which files a worker happens to get: a flaky suite.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ISOLATED_FILES } from '../../vitest.config.ts';

const root = join(import.meta.dirname, '../..');
const files = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
const read = (f: string) => readFileSync(join(root, f), 'utf8');

/** Calls that start a process that outlives the call (the *Sync forms end before they return). */
const STARTS_PROCESS = /\b(spawn|fork|execFile)\(|\.launch\(/;
/** State of the process that the next file of a reused worker would see. */
const PROCESS_STATE =
  /process\.env\.\w+\s*=[^=]|delete process\.env|process\.env\[[^\]]+\]\s*=[^=]|vi\.(mock|stubEnv|stubGlobal)\(|process\.(chdir|umask)\(|startTracing\(|setGlobal\w*\(|process\.on\(/;

const helpers = files('test/helpers').filter((f) => f.endsWith('.ts'));
const spawningHelpers = helpers.filter((f) => STARTS_PROCESS.test(read(f))).map((f) => f.replace(/^test\//, ''));
const tests = files('test').filter((f) => f.endsWith('.test.ts'));

describe('test layout', () => {
  it('finds the helpers that start processes (the rule sees them)', () => {
    expect(spawningHelpers).toEqual(
      expect.arrayContaining(['helpers/browser.ts', 'helpers/cli.ts', 'helpers/fleet.ts', 'helpers/pgbouncer.ts']),
    );
  });

  it('runs every file that starts a process or changes process-wide state in a fresh worker', () => {
    const needed = tests.filter((f) => {
      const text = read(f);
      return (
        STARTS_PROCESS.test(text) || PROCESS_STATE.test(text) || spawningHelpers.some((h) => text.includes(`/${h}'`))
      );
    });
    const missing = needed.filter((f) => !ISOLATED_FILES.includes(f));
    expect(missing).toEqual([]);
  });

  it('lists only files that exist', () => {
    expect(ISOLATED_FILES.filter((f) => !tests.includes(f))).toEqual([]);
  });
});
