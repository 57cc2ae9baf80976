/**
 * The janitor (Hydra's `janitor`, and the daily `oauth2_janitor` task): deletes expired rows in
 * bounded batches — each batch one short statement — and at most `limit` rows per table per run;
 * the task enqueues itself again while a table still had `limit` rows due (Hydra's flushInactive
 * loop). Only expired rows go: tokens and codes past `expires_at` (refresh tokens that never expire
 * stay), consent sessions whose `remember_for` ran out, used skipped-consent ids, device
 * authorization requests past `ttl.device_user_code` (and their wrong-user-code counters), login sessions
 * past their lifetime, and jti records of expired assertions.
 *
 * Targets (CLI flags): `tokens` (authorization codes, access and refresh tokens), `requests`
 * (consent sessions, used consent ids and verifiers, pushed authorization requests, device requests), `sessions` (login sessions), `jtis` (used client-assertion
 * and JWT-bearer `jti`s), `grants` (trusted JWT-bearer issuers past their `expires_at`, as Hydra's
 * `--grants`; their keys stay in the issuer's key set, unused).
 */
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import { countExpired, deleteExpiredBatch, type ExpiringTable, type ExpiryCutoff } from '../store/janitor.ts';
import type { TokenChanges } from '../store/tokens.ts';
import type { Db } from '../tables.ts';
import type { OAuth2Jobs } from '../tasks.ts';
import { JANITOR_TARGETS, type JanitorTarget } from './schemas.ts';

export const JANITOR_TASK = 'oauth2_janitor' as const;

const TABLES: Record<JanitorTarget, ExpiringTable[]> = {
  tokens: [
    { table: 'oauth2_authorization_codes', key: 'signature', age: 'requested_at' },
    { table: 'oauth2_access_tokens', key: 'signature', age: 'requested_at' },
    { table: 'oauth2_refresh_tokens', key: 'signature', age: 'requested_at' },
  ],
  requests: [
    { table: 'oauth2_flows', key: 'consent_request_id', age: 'requested_at' },
    { table: 'oauth2_used_consents', key: 'consent_request_id', age: null },
    { table: 'oauth2_used_verifiers', key: 'id', age: null },
    { table: 'oauth2_pushed_requests', key: 'signature', age: null },
    { table: 'oauth2_device_requests', key: 'signature', age: 'requested_at' },
    { table: 'oauth2_device_challenge_attempts', key: 'challenge_id', age: null },
  ],
  sessions: [{ table: 'oauth2_login_sessions', key: 'id', age: 'authenticated_at' }],
  jtis: [{ table: 'oauth2_jti_blacklist', key: 'signature', age: null }],
  grants: [{ table: 'oauth2_trusted_jwt_bearer_issuers', key: 'id', age: 'created_at' }],
};

export interface JanitorOptions {
  /** Empty: every target. */
  targets?: readonly JanitorTarget[];
  /** Rows per table per run (`janitor.limit`). */
  limit: number;
  /** Rows per delete statement (`janitor.batch_size`); at most `limit`. */
  batchSize: number;
  /** Keep rows made less than this long ago even when expired (ms; default 0). */
  keepIfYoungerMs?: number;
  /**
   * Hydra's `--access-lifespan` / `--refresh-lifespan` (ms): access (and refresh) tokens issued
   * longer ago than this are deleted whatever their stored expiry.
   */
  lifespans?: { access?: number; refresh?: number };
  /** Called after every batch (progress output). */
  onBatch?: (table: string, deleted: number) => void;
}

export interface JanitorResult {
  /** Rows deleted per table. */
  deleted: Record<string, number>;
  /** Tables that still had rows due when they reached the limit. */
  more: string[];
}

export interface JanitorDeps {
  db: Db;
  /** Where the continuation job goes. */
  jobs: OAuth2Jobs;
  clock: Clock;
  log: Logger;
  config: { janitor: { limit: number; batch_size: number } };
  /** Announces the access tokens a batch deletes (store/tokens.ts). */
  changes: TokenChanges;
}

/** The cutoff of one table: a lifespan given for its tokens replaces their stored expiry. */
function cutoffFor(t: ExpiringTable, c: ExpiryCutoff, o: JanitorOptions): ExpiryCutoff {
  const span =
    t.table === 'oauth2_access_tokens'
      ? o.lifespans?.access
      : t.table === 'oauth2_refresh_tokens'
        ? o.lifespans?.refresh
        : undefined;
  return span === undefined ? c : { ...c, issuedBefore: new Date(c.now.getTime() - span) };
}

export function createJanitor(d: JanitorDeps) {
  const log = d.log.child({ component: 'janitor' });

  function plan(o: JanitorOptions): { tables: ExpiringTable[]; cutoff: ExpiryCutoff } {
    if (!Number.isInteger(o.limit) || o.limit < 1) throw new Error('janitor: the limit must be a positive integer');
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1 || o.batchSize > o.limit) {
      throw new Error('janitor: the batch size must be a positive integer no larger than the limit');
    }
    const targets = o.targets?.length ? o.targets : JANITOR_TARGETS;
    const now = d.clock.now();
    const madeBefore = new Date(now.getTime() - (o.keepIfYoungerMs ?? 0));
    return {
      tables: JANITOR_TARGETS.filter((t) => targets.includes(t)).flatMap((t) => TABLES[t]),
      cutoff: { now, madeBefore },
    };
  }

  return {
    /** Rows due per table, counted up to the limit (the CLI's progress bar). */
    async estimate(o: JanitorOptions): Promise<Record<string, number>> {
      const { tables, cutoff } = plan(o);
      const out: Record<string, number> = {};
      for (const t of tables) out[t.table] = await countExpired(d.db, t, cutoffFor(t, cutoff, o), o.limit);
      return out;
    },

    /** One run over the targets. @throws on a bad limit / batch size */
    async run(o: JanitorOptions): Promise<JanitorResult> {
      const { tables, cutoff } = plan(o);
      const result: JanitorResult = { deleted: {}, more: [] };
      for (const t of tables) {
        let deleted = 0;
        while (deleted < o.limit) {
          const want = Math.min(o.batchSize, o.limit - deleted);
          const n = await deleteExpiredBatch(d.db, t, cutoffFor(t, cutoff, o), want, d.changes);
          deleted += n;
          if (n) o.onBatch?.(t.table, n);
          if (n < want) break;
        }
        result.deleted[t.table] = deleted;
        if (deleted >= o.limit) result.more.push(t.table);
        log.info({ table: t.table, deleted, limitReached: deleted >= o.limit }, 'janitor: expired rows deleted');
      }
      return result;
    },

    /**
     * The `oauth2_janitor` task: one run with `janitor.limit` / `janitor.batch_size`; when a table
     * reached the limit, the task enqueues itself to go on (one pending continuation at most).
     */
    async runTask(targets: readonly JanitorTarget[] | undefined): Promise<JanitorResult> {
      const result = await this.run({
        ...(targets ? { targets } : {}),
        limit: d.config.janitor.limit,
        batchSize: Math.min(d.config.janitor.batch_size, d.config.janitor.limit),
      });
      if (result.more.length) {
        // Not tied to a state change: the batches above committed on their own, and a continuation
        // that runs twice only finds fewer rows.
        await d.jobs.add(d.db, JANITOR_TASK, targets ? { targets: [...targets] } : {}, {
          maxAttempts: 3,
          jobKey: `${JANITOR_TASK}:continue`,
          jobKeyMode: 'replace',
        });
        log.info({ tables: result.more }, 'janitor: rows remain; continuing in a new job');
      }
      return result;
    },
  };
}

export type Janitor = ReturnType<typeof createJanitor>;
