/**
 * `npm run test:soak -- N [vitest arguments]`: runs the suite N times (each run as `npm test` runs
 * it, with vitest's JSON report on the side) and tallies the failures per test, per file that failed
 * outside its tests, and the runs that exited non-zero with every test passed (errors outside tests).
 * A flaky test shows up here before it lands. N is bounded (at most 100).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

interface Report {
  numFailedTests: number;
  testResults: Array<{
    name: string;
    status: string;
    message?: string;
    assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
  }>;
}

const [countArg, ...vitestArgs] = process.argv.slice(2);
const runs = Math.min(100, Math.max(1, Number(countArg ?? 5) || 5));
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
const tally = new Map<string, { count: number; first: string }>();
const note = (key: string, message: string) => {
  const e = tally.get(key) ?? { count: 0, first: message };
  e.count++;
  tally.set(key, e);
};
let red = 0;
const seconds: number[] = [];
try {
  for (let i = 1; i <= runs; i++) {
    const out = join(dir, `run-${i}.json`);
    const started = Date.now();
    const r = spawnSync(
      'npx',
      ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile=${out}`, ...vitestArgs],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      },
    );
    seconds.push(Math.round((Date.now() - started) / 1000));
    let report: Report | undefined;
    try {
      report = JSON.parse(readFileSync(out, 'utf8')) as Report;
    } catch {
      report = undefined;
    }
    let failedTests = 0;
    for (const f of report?.testResults ?? []) {
      const file = relative(process.cwd(), f.name);
      for (const a of f.assertionResults) {
        if (a.status !== 'failed') continue;
        failedTests++;
        note(`${file} > ${a.fullName}`, (a.failureMessages[0] ?? '').split('\n')[0] ?? '');
      }
      if (f.status === 'failed' && !f.assertionResults.some((a) => a.status === 'failed')) {
        note(`${file} (outside its tests)`, (f.message ?? '').split('\n')[0] ?? '');
      }
    }
    if (r.status !== 0) red++;
    if (r.status !== 0 && failedTests === 0) {
      // Exit 1 with every test passed: an error raised outside a test (the summary names it).
      const tail = `${r.stdout}`
        .split('\n')
        .filter((l) => l.trim().startsWith('Error') || l.includes('errors outside'));
      note('(errors outside tests)', tail.join(' | ').slice(0, 300) || `exit ${r.status}`);
    }
    process.stdout.write(`run ${i}/${runs}: exit ${r.status}, ${failedTests} failed tests, ${seconds.at(-1)} s\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`\n${runs} runs, ${red} red; seconds per run: ${seconds.join(', ')}\n`);
if (tally.size) {
  process.stdout.write('failures per test (count: test — first message):\n');
  for (const [k, v] of [...tally].sort((a, b) => b[1].count - a[1].count)) {
    process.stdout.write(`  ${v.count}: ${k} — ${v.first}\n`);
  }
}
process.exit(red ? 1 : 0);
