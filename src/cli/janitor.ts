/**
 * `gatehouse janitor [dsn]` (Hydra's `janitor`): deletes expired rows in bounded batches, at most
 * `--limit` rows per table per run, `--batch-size` rows per statement. With no target flag every
 * target runs. A progress bar goes to stderr on a terminal; the counts go to stdout (and the log).
 */
import type { Command } from 'commander';
import type { JanitorTarget } from '../oauth2/janitor/schemas.ts';
import { type GlobalFlags, run } from './common.ts';
import { startProgress } from './progress.ts';

interface JanitorFlags {
  tokens?: boolean;
  requests?: boolean;
  sessions?: boolean;
  jtis?: boolean;
  grants?: boolean;
  limit?: string;
  batchSize?: string;
  keepIfYounger?: string;
  readFromEnv?: boolean;
  accessLifespan?: string;
  refreshLifespan?: string;
  consentRequestLifespan?: string;
  progress?: boolean;
  json?: boolean;
}

const positive = (name: string, v: string | undefined, fallback: number) => {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`janitor: --${name} must be a positive integer`);
  return n;
};

export function registerJanitor(program: Command): void {
  program
    .command('janitor [dsn]')
    .description('Delete expired tokens, codes, consent and login sessions and used jtis in bounded batches')
    .option('--tokens', 'authorization codes, access and refresh tokens')
    .option('--requests', 'consent sessions past remember_for, used skipped-consent ids')
    .option('--sessions', 'login sessions')
    .option('--jtis', 'used client-assertion and JWT-bearer jti values')
    .option('--grants', 'trusted JWT-bearer issuers past their expires_at')
    .option('--limit <n>', 'rows deleted per table in this run (default janitor.limit)')
    .option('--batch-size <n>', 'rows per delete statement, at most the limit (default janitor.batch_size)')
    .option('--keep-if-younger <duration>', 'keep rows made less than this long ago, e.g. 1h (default 0)')
    .option('--access-lifespan <duration>', 'delete access tokens issued longer ago than this, e.g. 1h (Hydra)')
    .option('--refresh-lifespan <duration>', 'delete refresh tokens issued longer ago than this, e.g. 720h (Hydra)')
    .option(
      '--consent-request-lifespan <duration>',
      'accepted for Hydra compatibility: login and consent requests are not stored (their challenges expire by themselves)',
    )
    .option('-e, --read-from-env', 'read the DSN from the environment (the default; for Hydra compatibility)')
    .option('--no-progress', 'no progress bar')
    .option('--json', 'print the counts as JSON')
    .action((dsn: string | undefined, o: JanitorFlags) =>
      run(async () => {
        const [{ withEphemeralSecret }, { createContainer }, { loadConfig }, { parseDuration }, { JANITOR_TARGETS }] =
          await Promise.all([
            import('./config.ts'),
            import('../container.ts'),
            import('../config.ts'),
            import('../core/config/duration.ts'),
            import('../oauth2/janitor/schemas.ts'),
          ]);
        const g = program.opts<GlobalFlags>();
        const config = loadConfig({
          needsSecrets: false,
          ...(g.config ? { file: g.config } : {}),
          overrides: { ...(g.dev ? { dev: true } : {}), ...(dsn ? { dsn } : {}) },
        });
        const keep = o.keepIfYounger === undefined ? 0 : parseDuration(o.keepIfYounger);
        if (keep === undefined || keep < 0)
          throw new Error('janitor: --keep-if-younger must be a duration like 1h or 30m');
        const lifespan = (flag: string, v: string | undefined) => {
          if (v === undefined) return undefined;
          const n = parseDuration(v);
          if (n === undefined || n <= 0) throw new Error(`janitor: --${flag} must be a duration like 1h or 30m`);
          return n;
        };
        const access = lifespan('access-lifespan', o.accessLifespan);
        const refresh = lifespan('refresh-lifespan', o.refreshLifespan);
        lifespan('consent-request-lifespan', o.consentRequestLifespan);
        const targets = JANITOR_TARGETS.filter((t: JanitorTarget) => o[t]);
        const opts = {
          targets,
          limit: positive('limit', o.limit, config.janitor.limit),
          batchSize: positive('batch-size', o.batchSize, config.janitor.batch_size),
          keepIfYoungerMs: keep,
          lifespans: { ...(access ? { access } : {}), ...(refresh ? { refresh } : {}) },
        };
        if (opts.batchSize > opts.limit) throw new Error('janitor: --batch-size must not exceed --limit');
        const c = await createContainer({ config: withEphemeralSecret(config), autoMigrate: false });
        try {
          const janitor = c.oauth2.janitor;
          // `--json` is for programs: no plain progress lines next to it (a terminal still gets the bar).
          const show = o.progress !== false && (process.stderr.isTTY || !o.json);
          const progress = show
            ? startProgress(
                'janitor',
                Object.values(await janitor.estimate(opts)).reduce((x, y) => x + y, 0),
              )
            : undefined;
          const result = await janitor.run({ ...opts, onBatch: (table, n) => progress?.add(n, table) });
          progress?.stop();
          if (o.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
          else {
            for (const [table, n] of Object.entries(result.deleted)) process.stdout.write(`${table}: ${n} deleted\n`);
            if (result.more.length) {
              process.stdout.write(`limit reached for ${result.more.join(', ')}: run the janitor again for the rest\n`);
            }
          }
        } finally {
          await c.close();
        }
      }),
    );
}
