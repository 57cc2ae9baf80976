/**
 * `gatehouse revoke login-sessions --subject <s> [dsn]`: ends every login session of a subject in
 * this process, straight on the database (as `janitor`), in batches of
 * `oauth2.session_revocation.batch_size` that each commit on their own, with the back-channel
 * logout notifications queued in the same transactions, as `DELETE /admin/oauth2/auth/sessions/login?subject=`
 * does. Progress goes to stderr (a bar on a terminal, plain lines otherwise).
 *
 * `gatehouse revoke console-sessions --subject <s> [dsn]`: ends every operator console session of a
 * subject (its rows in `console_sessions` go; every browser of it must sign in again), e.g. for an
 * operator's lost laptop. To lock a subject out for good, also remove it from `console.operators`.
 */
import type { Command } from 'commander';
import { type GlobalFlags, run, verb } from './common.ts';
import { startProgress } from './progress.ts';

export function registerSessions(program: Command): void {
  verb(program, 'revoke', 'Revoke OAuth 2.0 tokens and login sessions')
    .command('console-sessions [dsn]')
    .description('End every operator console session of a subject (each of its browsers must sign in again)')
    .requiredOption('--subject <subject>', 'the operator whose console sessions end')
    .option('--json', 'print the result as JSON')
    .action((dsn: string | undefined, o: { subject: string; json?: boolean }) =>
      run(async () => {
        const [{ createContainer }, { loadConfig }, { revokeConsoleSessions }] = await Promise.all([
          import('../container.ts'),
          import('../config.ts'),
          import('../console/sessions.ts'),
        ]);
        const g = program.opts<GlobalFlags>();
        const config = loadConfig({
          ...(g.config ? { file: g.config } : {}),
          overrides: { ...(g.dev ? { dev: true } : {}), ...(dsn ? { dsn } : {}) },
        });
        const c = await createContainer({ config, autoMigrate: false });
        try {
          const deleted = await revokeConsoleSessions(c.db, o.subject);
          if (o.json) process.stdout.write(`${JSON.stringify({ deleted })}\n`);
          else process.stdout.write(`${deleted} console session(s) of ${JSON.stringify(o.subject)} ended\n`);
        } finally {
          await c.close();
        }
      }),
    );
  verb(program, 'revoke', 'Revoke OAuth 2.0 tokens and login sessions')
    .command('login-sessions [dsn]')
    .description('End every login session of a subject, in batches (back-channel logout is queued for each)')
    .requiredOption('--subject <subject>', 'the subject whose login sessions end')
    .option('--no-progress', 'no progress output')
    .option('--json', 'print the result as JSON')
    .action((dsn: string | undefined, o: { subject: string; progress?: boolean; json?: boolean }) =>
      run(async () => {
        const [{ createContainer }, { loadConfig }] = await Promise.all([
          import('../container.ts'),
          import('../config.ts'),
        ]);
        const g = program.opts<GlobalFlags>();
        const config = loadConfig({
          ...(g.config ? { file: g.config } : {}),
          overrides: { ...(g.dev ? { dev: true } : {}), ...(dsn ? { dsn } : {}) },
        });
        const c = await createContainer({ config, autoMigrate: false });
        try {
          const sessions = c.oauth2.flows.sessions;
          const show = o.progress !== false && (process.stderr.isTTY || !o.json);
          const progress = show
            ? startProgress('revoke login-sessions', await sessions.countLoginSessions(o.subject))
            : undefined;
          const r = await sessions.revokeLoginSessions(o.subject, undefined, undefined, (n) => progress?.add(n));
          progress?.stop();
          if (o.json) process.stdout.write(`${JSON.stringify(r)}\n`);
          else {
            process.stdout.write(
              `${r.deleted} login session(s) of ${JSON.stringify(o.subject)} ended; ${r.notified} back-channel logout notification(s) queued\n`,
            );
          }
        } finally {
          await c.close();
        }
      }),
    );
}
