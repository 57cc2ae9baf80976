import { relative } from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

const firstLine = (s: unknown) =>
  String(s ?? '')
    .split('\n')[0]
    ?.slice(0, 300) ?? '';

/**
 * Prints the plain closing lines CI reads: `N passed, N failed`, then, when the run failed, every
 * failing file with its failing tests (or the error that stopped the file) and every error raised
 * outside a test (an unhandled rejection, an exception after a test ended), so the last lines of a
 * red run say why.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError> = []): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const failures: string[] = [];
    for (const m of testModules) {
      const tests = [...m.children.allTests()];
      const file = relative(process.cwd(), m.moduleId);
      const failedHere = tests.filter((t) => t.result().state === 'failed');
      if (m.state() === 'failed' && tests.length === 0) {
        failed++;
        const why = m.errors()[0];
        failures.push(`  ${file}: ${firstLine(why?.message ?? 'the file failed before its tests ran')}`);
      }
      for (const t of tests) {
        const s = t.result().state;
        if (s === 'passed') passed++;
        else if (s === 'failed') failed++;
        else skipped++;
      }
      if (failedHere.length) {
        failures.push(`  ${file}`);
        for (const t of failedHere) {
          const err = t.result().errors?.[0];
          failures.push(`    ✗ ${t.fullName}: ${firstLine(err?.message)}`);
        }
      } else if (m.state() === 'failed' && tests.length > 0) {
        failures.push(`  ${file}: ${firstLine(m.errors()[0]?.message ?? 'failed outside its tests')}`);
      }
    }
    const out = [`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`];
    if (failures.length) out.push('failing files:', ...failures);
    if (unhandledErrors.length) {
      out.push(`errors outside tests (${unhandledErrors.length}; each fails the run even when every test passed):`);
      for (const e of unhandledErrors) {
        const where = (e as { VITEST_TEST_PATH?: string }).VITEST_TEST_PATH;
        out.push(
          `  ${e.name ?? 'Error'}: ${firstLine(e.message)}${where ? ` (in ${relative(process.cwd(), where)})` : ''}`,
        );
      }
    }
    process.stdout.write(`${out.join('\n')}\n`);
  }
}
