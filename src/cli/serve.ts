/** `gatehouse serve all|public|admin`: the command's definition; what it runs is in serve-run.ts. */
import type { Command } from 'commander';
import { type GlobalFlags, run } from './common.ts';

export function registerServe(program: Command): void {
  const cmd = program.command('serve').description('Run the HTTP listeners');
  for (const which of ['all', 'public', 'admin'] as const) {
    cmd
      .command(which)
      .description(
        which === 'all' ? 'Public (4444) and admin (4445) listeners in one process' : `Only the ${which} listener`,
      )
      // Scripts written for Hydra pass these; gatehouse sends no usage statistics and has no telemetry to skip.
      .option('--sqa-opt-out', 'accepted for Hydra compatibility (no effect: gatehouse sends no usage statistics)')
      .option('--disable-telemetry', 'accepted for Hydra compatibility (no effect)')
      .action(() => run(async () => (await import('./serve-run.ts')).serveCommand(which, program.opts<GlobalFlags>())));
  }
}
