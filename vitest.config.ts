import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Tests import the package by its name, as embedders do; in the checkout that is the TypeScript source.
  resolve: { alias: { gatehouse: new URL('./src/index.ts', import.meta.url).pathname } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./test/setup/global.ts'],
    pool: 'forks',
    hookTimeout: 60_000,
    testTimeout: 30_000,
    reporters: ['default', './test/setup/summary-reporter.ts'],
  },
});
