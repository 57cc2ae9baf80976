#!/usr/bin/env node
/**
 * `gatehouse` — one command group per file (Hydra's cmd/ naming). The command definitions load
 * eagerly (for `--help`); what a command runs is imported by its action (`import()`, a literal
 * path so that the package build rewrites it), so a command loads only what it uses.
 */
import { Command, Option } from 'commander';
import { VERSION } from '../version.ts';
import { registerAdminKey } from './admin-key.ts';
import { registerClients } from './clients.ts';
import { registerDebug } from './debug.ts';
import { registerDsync } from './dsync.ts';
import { adminTokenOption } from './endpoint.ts';
import { registerImport } from './import.ts';
import { registerJanitor } from './janitor.ts';
import { registerJobs } from './jobs.ts';
import { registerJwks } from './jwks.ts';
import { registerMigrate } from './migrate.ts';
import { registerPerform } from './perform.ts';
import { registerServe } from './serve.ts';
import { registerSessions } from './sessions.ts';
import { registerTokens } from './tokens.ts';
import { registerWorker } from './worker.ts';

export function buildProgram(): Command {
  const program = new Command('gatehouse')
    .description('OAuth 2.0 / OpenID Connect server and SCIM directory sync on PostgreSQL')
    .option('-c, --config <file>', 'YAML or JSON config file (also GATEHOUSE_CONFIG)')
    .option('--dev', 'development mode (http issuer, insecure cookies)')
    // For tests of the upgrade rules only: migrations from another folder than sql/.
    .addOption(new Option('--migrations-dir <dir>').hideHelp())
    .version(VERSION, '-v, --version')
    .showHelpAfterError();
  program
    .command('version')
    .description('Print the version')
    .action(() => {
      process.stdout.write(`gatehouse v${VERSION}\n`);
    });
  registerServe(program);
  registerWorker(program);
  registerMigrate(program);
  registerJobs(program);
  registerJanitor(program);
  registerDebug(program);
  registerJwks(program);
  registerPerform(program);
  registerClients(program);
  registerDsync(program);
  registerTokens(program);
  registerImport(program);
  registerSessions(program);
  registerAdminKey(program);
  addSkipTlsVerify(program);
  addAdminToken(program);
  program.hook('preAction', (_self, action) => {
    // The process makes only this command's requests, so the switch may be process-wide; Node.js
    // prints its own warning about it on stderr.
    if (action.opts().skipTlsVerify) process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  });
  return program;
}

/**
 * Hydra's `--skip-tls-verify` on every command that talks to an API (`-e/--endpoint`): TLS
 * certificates of that endpoint are not verified (self-signed development setups only).
 */
function addSkipTlsVerify(cmd: Command): void {
  for (const sub of cmd.commands) {
    if (sub.options.some((o) => o.long === '--endpoint') && !sub.options.some((o) => o.long === '--skip-tls-verify')) {
      sub.option('--skip-tls-verify', 'do not verify the TLS certificate of the endpoint (insecure: development only)');
    }
    addSkipTlsVerify(sub);
  }
}

/**
 * `--token` (or `GATEHOUSE_ADMIN_TOKEN`) on every command that calls the admin API (its `--endpoint`
 * is the admin API URL): the credential of `serve.admin.auth`, sent as `Authorization: Bearer` by
 * the admin API client (endpoint.ts `adminHeaders`).
 */
function addAdminToken(cmd: Command): void {
  for (const sub of cmd.commands) {
    const admin = sub.options.some((o) => o.long === '--endpoint' && o.description.startsWith('admin API'));
    if (admin && !sub.options.some((o) => o.long === '--token')) sub.addOption(adminTokenOption());
    addAdminToken(sub);
  }
}

/** Runs the CLI with the process arguments (the package's `gatehouse` bin calls this). */
export async function main(argv: string[] = process.argv): Promise<void> {
  quietOnClosedPipe();
  await buildProgram().parseAsync(argv);
}

/**
 * `gatehouse migrate status | head -1`: once the reader is gone, writing fails with EPIPE. That is
 * the reader's choice, not an error: stop quietly instead of printing a stack trace.
 */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(0);
      throw e;
    });
  }
}

if (import.meta.main) {
  await main();
}
