import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The suite runs in two projects, both two files at a time (one per core on the 2-core CI machine,
 * where vitest's default would be one):
 *
 * - `main`: every file that neither starts a process nor changes process-wide state, in workers
 *   that are reused from file to file (`isolate: false`). A fresh worker per file spent most of the
 *   suite's CPU importing the same modules again (1m50s of CPU for these files reused, against
 *   several minutes isolated); the files share nothing else: each creates its own database and
 *   servers and closes them.
 * - `isolated`, after `main`: the files below, each in a fresh worker. They start processes of their
 *   own (the `gatehouse` bin, a worker, PgBouncer, a fleet, `npm pack`) or a browser, which keep a
 *   core busy beside the worker, or change what a reused worker would carry into the next file
 *   (OpenTelemetry's global tracer provider, environment variables).
 *
 * test/unit/test-layout.test.ts fails when a file that spawns or changes such state is not listed.
 */
export const ISOLATED_FILES = [
  // processes and browsers
  'test/http/console/console-directory-admin.test.ts',
  'test/http/console/console-dsync.test.ts',
  'test/http/console/console.test.ts',
  'test/http/core/admin-auth.test.ts',
  'test/http/core/cockroach-engine.test.ts',
  'test/http/core/dialect.test.ts',
  'test/http/core/fleet.test.ts',
  'test/http/core/hydra-cli.test.ts',
  'test/http/core/jobs.test.ts',
  'test/http/core/migrate.test.ts',
  'test/http/core/package.test.ts',
  'test/http/core/pgbouncer.test.ts',
  'test/http/core/queue-outbox.test.ts',
  'test/http/core/serve.test.ts',
  'test/http/core/tls.test.ts',
  'test/http/core/upgrade.test.ts',
  'test/http/core/worker-early-death.test.ts',
  'test/http/dsync/google-schedule.test.ts',
  'test/http/dsync/setup-page.test.ts',
  'test/http/dsync/webhooks-lane.test.ts',
  'test/http/dsync/webhooks-retries.test.ts',
  'test/http/dsync/webhooks-worker-kill.test.ts',
  'test/http/oauth2/clients-cli.test.ts',
  'test/http/oauth2/debug.test.ts',
  'test/http/oauth2/dev-ui.test.ts',
  'test/http/oauth2/device-flow.test.ts',
  'test/http/oauth2/janitor.test.ts',
  'test/http/oauth2/jwk-cli.test.ts',
  'test/http/oauth2/logout.test.ts',
  'test/http/oauth2/perform-cli.test.ts',
  'test/http/oauth2/sessions-revocation.test.ts',
  'test/http/oauth2/tokens-cli.test.ts',
  'test/http/observability/worker-metrics.test.ts',
  // process-wide state
  'test/http/dsync/controller-options.test.ts', // SECRETS_SYSTEM in process.env
  'test/http/observability/tracing.test.ts', // OpenTelemetry's global tracer provider
  'test/unit/core/otlp-export.test.ts', // the same
];

const maxWorkers = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

export default defineConfig({
  // Tests import the package by its name, as embedders do; in the checkout that is the TypeScript source.
  resolve: { alias: { gatehouse: new URL('./src/index.ts', import.meta.url).pathname } },
  test: {
    globalSetup: ['./test/setup/global.ts'],
    pool: 'forks',
    hookTimeout: 60_000,
    testTimeout: 30_000,
    reporters: ['default', './test/setup/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          // vitest's own exclusions too (node_modules: the bench peers install theirs under test/bench/peers).
          exclude: [...configDefaults.exclude, ...ISOLATED_FILES],
          isolate: false,
          maxWorkers: maxWorkers('GATEHOUSE_TEST_WORKERS', 2),
        },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ISOLATED_FILES,
          maxWorkers: maxWorkers('GATEHOUSE_TEST_ISOLATED_WORKERS', 2),
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
