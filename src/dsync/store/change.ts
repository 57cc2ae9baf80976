/**
 * How a planned directory change reaches the database (src/dsync/change/apply.ts decides when):
 * on PostgreSQL one call of gatehouse_dsync_apply (sql/0270_dsync_apply.sql, its body now that of
 * sql/0360_dsync_apply_prepared.sql) for one or several changes of a directory; elsewhere
 * (CockroachDB) each of the plan's statements on its own, in the caller's transaction. Both run the
 * same statements (store/steps.ts) in the same order; a statement with arguments is a prepared
 * statement in the function and a parameterized one here.
 */
import { CompiledQuery, sql } from 'kysely';
import { pgCode } from '../../core/db/errors.ts';
import type { ServerJob } from '../../core/jobs/queue.ts';
import { DirectoryUnavailable } from '../events/service.ts';
import type { Executor } from '../tables.ts';
import type { Statement } from './steps.ts';

/** A change as the function takes it (its events' payloads apart, see callApply). */
export interface WireItem {
  reads: Array<Statement & { expect: string; else?: Statement }>;
  writes: Statement[];
  /** `payload`: the payload's JSON text. */
  events: Array<{ id: string; event: string; payload: string; when?: { write: number; key?: string } }>;
}

const PAYLOAD_FREE = (e: WireItem['events'][number]) => ({
  id: e.id,
  event: e.event,
  ...(e.when ? { when: e.when } : {}),
});

export interface WireCommit {
  created_at: string;
  outbox: 'none' | 'batch' | 'realtime';
  sender_id: string;
  job: ServerJob | null;
}

/** What became of one change: stale (the texts its reads gave), or written (each write's keys, the events kept). */
export type ItemResult = { stale: string[] } | { writes: string[][]; events: number[] };

/**
 * One call of gatehouse_dsync_apply: its own transaction when `exec` is the pool, or a statement of
 * the caller's. The directory deleted or deactivated meanwhile is DirectoryUnavailable (nothing of
 * the call is kept).
 */
export async function callApply(
  exec: Executor,
  change: { directory: string; locks: string[]; items: WireItem[]; commit: WireCommit },
): Promise<{ before: number; items: ItemResult[]; createdAt?: Date }> {
  try {
    // The payloads travel as one json array of their own: stored as sent, and not read again while
    // the function walks the plan (a jsonb value, parsed once).
    const plan = { ...change, items: change.items.map((i) => ({ ...i, events: i.events.map(PAYLOAD_FREE) })) };
    const payloads = `[${change.items.flatMap((i) => i.events.map((e) => e.payload)).join(',')}]`;
    const { rows } = await sql<{ r: unknown }>`
      select gatehouse_dsync_apply(${JSON.stringify(plan)}::jsonb, ${payloads}::json) as r`.execute(exec);
    const r = rows[0]?.r as {
      before: number | string;
      /** When the events were written (sql/0350); absent before that migration ran. */
      created_at?: string;
      items: Array<{ stale?: string[]; writes?: string[]; events?: number[] }>;
    };
    return {
      before: Number(r.before),
      ...(r.created_at ? { createdAt: new Date(r.created_at) } : {}),
      items: r.items.map((i) =>
        i.stale
          ? { stale: i.stale }
          : { writes: (i.writes ?? []).map((w) => JSON.parse(w) as string[]), events: i.events ?? [] },
      ),
    };
  } catch (e) {
    const code = pgCode(e);
    if (code === 'GHD44') throw new DirectoryUnavailable('deleted');
    if (code === 'GHD09') throw new DirectoryUnavailable('deactivated');
    throw e;
  }
}

/**
 * Runs one statement of a plan on its own, its arguments (if any) as the statement's parameters:
 * the json text it returns ('null' when it returns nothing).
 */
export async function runStatement(exec: Executor, s: Statement): Promise<string> {
  const { rows } = await exec.executeQuery<Record<string, unknown>>(CompiledQuery.raw(s.sql, s.args ?? []));
  const first = rows[0];
  const v = first === undefined ? null : Object.values(first)[0];
  return typeof v === 'string' ? v : 'null';
}
