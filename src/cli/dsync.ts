/**
 * `gatehouse dsync …`: directory-sync operations.
 * - `dsync sync --directory <id>`: one Google Workspace sync of a directory, in this process, with a
 *   progress bar on a terminal; the summary on stdout, logs on stderr. It takes the directory's sync
 *   lease like any run, so it never overlaps a worker's run of the same directory.
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { SyncProgress, SyncResult } from '../dsync/cloud/google/sync.ts';
import { type GlobalFlags, run } from './common.ts';

interface SyncFlags {
  directory: string;
  progress: boolean;
  json?: boolean;
}

const PHASES = { users: 'users  ', groups: 'groups ', members: 'members' } as const;

function progressBar() {
  const bar = new cliProgress.SingleBar(
    {
      format: '{phase} |{bar}| {value}/{total} | {events} events | {duration_formatted}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let phase: string | undefined;
  return {
    update(p: SyncProgress) {
      const payload = { phase: PHASES[p.phase], events: p.counts.events };
      if (phase !== p.phase) {
        if (phase) bar.stop();
        phase = p.phase;
        bar.start(p.total, p.done, payload);
      } else {
        bar.setTotal(p.total);
        bar.update(p.done, payload);
      }
    },
    stop: () => phase && bar.stop(),
  };
}

export function summarize(r: SyncResult): string {
  const c = r.counts;
  const seconds = (r.durationMs / 1000).toFixed(1);
  return [
    `directory ${r.directoryId}: ${r.status} in ${seconds} s${r.reason ? ` (${r.reason})` : ''}`,
    `  users:       ${c.users.created} created, ${c.users.updated} updated, ${c.users.deleted} deleted, ${c.users.skipped} skipped`,
    `  groups:      ${c.groups.created} created, ${c.groups.updated} updated, ${c.groups.deleted} deleted, ${c.groups.skipped} skipped`,
    `  memberships: ${c.memberships.added} added, ${c.memberships.removed} removed; ignored: ${c.memberships.notUsers} non-user members, ${c.memberships.unknownUsers} users outside the directory`,
    `  events:      ${c.events}; Directory API pages: ${c.pages}`,
    '',
  ].join('\n');
}

export function registerDsync(program: Command): void {
  const d = program.command('dsync').description('Directory sync operations');
  d.command('sync')
    .description('Run one Google Workspace sync of a directory now, in this process')
    .requiredOption('--directory <id>', 'the Google directory to sync')
    .option('--no-progress', 'no progress bar (also off when stderr is not a terminal)')
    .option('--json', 'print the result as JSON')
    .action((o: SyncFlags) =>
      run(async () => {
        const [{ configFrom }, { createContainer }, { createLogger }] = await Promise.all([
          import('./config.ts'),
          import('../container.ts'),
          import('../core/log.ts'),
        ]);
        const config = configFrom(program.opts<GlobalFlags>());
        const showBar = o.progress && process.stderr.isTTY === true;
        // Info lines would tear the bar apart; the bar shows the progress instead.
        const log = createLogger({
          level: showBar ? 'warn' : config.log.level,
          leakSensitiveValues: config.log.leak_sensitive_values,
          destination: process.stderr as never,
        });
        const c = await createContainer({ config, log, checkDialect: true });
        try {
          const bar = showBar ? progressBar() : undefined;
          let result: SyncResult;
          try {
            result = await c.dsync.services.google.syncDirectory(o.directory, {
              ...(bar ? { onProgress: (p) => bar.update(p) } : {}),
            });
          } finally {
            bar?.stop();
          }
          process.stdout.write(o.json ? `${JSON.stringify(result, null, 2)}\n` : summarize(result));
          if (result.status !== 'completed') throw new Error(`google sync ${result.status}: ${result.reason}`);
        } finally {
          await c.close();
        }
      }),
    );
}
