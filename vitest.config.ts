import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./test/setup/global.ts'],
    pool: 'forks',
    hookTimeout: 60_000,
    testTimeout: 30_000,
    reporters: ['default', './test/setup/summary-reporter.ts'],
  },
});
