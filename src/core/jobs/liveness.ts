/**
 * Dead-worker detection. graphile-worker releases the jobs of a worker that vanished without a
 * clean shutdown (SIGKILL, OOM, lost host) only after 4 hours. gatehouse workers do better:
 * - each worker pool holds, on a connection of its own, a session advisory lock keyed on its pool
 *   id, and registers the id in `worker_pools`; the lock lives exactly as long as the process (its
 *   connection closes when the process dies, and PostgreSQL then drops the lock);
 * - every `worker.liveness_check_interval` each worker tries that lock for every registered pool
 *   but its own: a lock it can take belongs to a dead pool, whose jobs and named queues are then
 *   released with `graphile_worker.force_unlock_workers` and run again at once.
 * Only registered pools are ever released, so a worker started some other way (the plain
 * graphile-worker CLI) is never mistaken for a dead one. That makes the registration a hard
 * precondition of locking a job: graphile-worker gets the pool through `gatedPool`, whose
 * `connect()` waits until every pool created so far holds its lock and has its committed
 * `worker_pools` row. A process that dies before that point has locked nothing; one that dies
 * after it is found by the next sweep.
 *
 * A live pool can also hold a job it does not run: a job fetch whose commit went through while its
 * answer was lost with the connection. Each sweep therefore also releases the jobs locked by this
 * process's own pools for longer than STRAY_AFTER_MS that none of its runners is running or has
 * finished within that time (`held`: a finished job's completion may still be on its way, see
 * gatedPool). No job is ever left to graphile-worker's 4-hour sweep.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import { isDatabaseUnavailable } from '../db/errors.ts';
import type { Logger } from '../log.ts';

/** The advisory-lock class of worker liveness locks (the second key is hashtext(pool id)). */
const LIVENESS_CLASS = 0x67_68_77_6c; // 'ghwl'

export interface Liveness {
  /** Called synchronously from graphile-worker's `pool:create` event. */
  register(poolId: string): void;
  /** Resolves when the registrations made so far are in place. */
  ready(): Promise<void>;
  /**
   * Resolves when every pool registered so far holds its lock and its row is committed; rejects
   * when a registration failed (and starts it again, so a later call can succeed).
   */
  registered(): Promise<void>;
  /** Releases the jobs of dead pools, and this process's stray ones, now; returns the dead pools' ids. */
  sweep(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * How long a job may stay locked by one of this process's pools while none of its runners runs it
 * (nor finished it within that time) before a sweep releases it: longer than a fetch takes to
 * start its job, and than a finished job's completion may take to be written (gatedPool retries a
 * statement for a minute, after up to a minute to connect).
 */
export const STRAY_AFTER_MS = 5 * 60_000;

/**
 * Worker liveness: this process's pools hold their advisory locks, and a periodic sweep releases the
 * jobs of dead workers and the stray jobs of this one.
 * Long: the locks, their re-acquisition after a lost connection and the sweep share one set of
 * registered pools.
 */
export async function startLiveness(o: {
  pool: pg.Pool;
  log: Logger;
  intervalMs: number;
  /** Ids of the jobs this process runs, or finished within STRAY_AFTER_MS. */
  held?: () => Iterable<string>;
}): Promise<Liveness> {
  const mine = new Set<string>();
  const pending: Promise<unknown>[] = [];
  let client: pg.PoolClient | undefined = await o.pool.connect();
  let stopped = false;
  let stopping: Promise<void> | undefined;
  /** The chain of registrations: each waits for the previous one, on the liveness connection. */
  let registration: Promise<void> = Promise.resolve();

  const hold = (c: pg.PoolClient, id: string) =>
    Promise.all([
      c.query('select pg_advisory_lock($1::int, hashtext($2))', [LIVENESS_CLASS, id]),
      c.query(
        `insert into worker_pools (id, hostname, pid) values ($1, $2, $3)
         on conflict (id) do update set hostname = excluded.hostname, pid = excluded.pid`,
        [id, hostname(), process.pid],
      ),
    ]);

  const watch = (c: pg.PoolClient) =>
    c.on('error', (e) => {
      if (stopped || client !== c) return;
      o.log.warn({ code: (e as { code?: string }).code }, 'worker liveness connection lost; re-acquiring');
      client = undefined;
      c.release(true);
    });
  watch(client);

  /** After a lost connection: a new one, holding every lock again. */
  async function reacquire(): Promise<void> {
    if (client || stopped) return;
    const c = await o.pool.connect();
    watch(c);
    client = c;
    for (const id of mine) await hold(c, id);
  }

  async function sweep(): Promise<string[]> {
    await reacquire();
    const db = await o.pool.connect();
    try {
      await db.query('begin');
      const { rows } = await db.query<{ id: string }>('select id from worker_pools where id <> all($1::text[])', [
        [...mine],
      ]);
      const dead: string[] = [];
      for (const r of rows) {
        const t = await db.query<{ free: boolean }>('select pg_try_advisory_xact_lock($1::int, hashtext($2)) as free', [
          LIVENESS_CLASS,
          r.id,
        ]);
        if (t.rows[0]?.free) dead.push(r.id);
      }
      if (dead.length) {
        await db.query('select graphile_worker.force_unlock_workers($1::text[])', [dead]);
        await db.query('delete from worker_pools where id = any($1::text[])', [dead]);
      }
      const stray = mine.size && o.held ? await releaseStray(db, [...mine], [...o.held()]) : [];
      await db.query('commit');
      if (dead.length) o.log.warn({ pools: dead }, 'released the jobs of dead worker processes');
      if (stray.length) o.log.warn({ jobs: stray }, 'released jobs this worker held without running them');
      return dead;
    } catch (e) {
      await db.query('rollback').catch(() => {});
      throw e;
    } finally {
      db.release();
    }
  }

  const timer = setInterval(() => {
    sweep().catch((e) => o.log.warn({ err: e }, 'worker liveness check failed'));
  }, o.intervalMs);
  timer.unref();

  const registerNow = (poolId: string) => {
    const previous = registration;
    registration = (async () => {
      await previous.catch(() => {});
      if (client) await hold(client, poolId);
      else await reacquire(); // holds every lock of `mine`, this one included
    })();
    pending.push(registration.catch((e) => o.log.error({ err: e }, 'worker registration failed')));
  };

  return {
    register(poolId) {
      mine.add(poolId);
      registerNow(poolId);
    },
    async ready() {
      await Promise.all(pending);
    },
    async registered() {
      const current = registration;
      try {
        await current;
      } catch (e) {
        // Try again from a fresh connection for the next caller; this one fails (no job is locked).
        if (registration === current) {
          const c = client;
          client = undefined;
          c?.release(true);
          registration = reacquire();
          pending.push(registration.catch(() => {}));
        }
        throw new Error(`worker registration failed: ${(e as Error).message}`);
      }
    },
    sweep,
    stop() {
      stopping ??= (async () => {
        stopped = true;
        clearInterval(timer);
        await Promise.all(pending);
        const c = client;
        client = undefined;
        if (!c) return;
        try {
          await c.query('delete from worker_pools where id = any($1::text[])', [[...mine]]);
        } catch {
          // the row of a stopped pool is removed by the next sweep of another worker
        }
        // Ending the session drops its advisory locks.
        c.release(true);
      })();
      return stopping;
    },
  };
}

/**
 * Unlocks the jobs (and their named queues) locked by `pools` for longer than STRAY_AFTER_MS, but
 * for `held`; returns their ids. A job this process starts after the list was taken was locked
 * just now, so it is never among them.
 */
async function releaseStray(db: pg.PoolClient, pools: string[], held: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `with stray as (
       select id, job_queue_id from graphile_worker._private_jobs
        where locked_by = any($1::text[])
          and locked_at < now() - make_interval(secs => $2::int / 1000.0)
          and id <> all($3::bigint[])
        for update skip locked
     ), queues as (
       update graphile_worker._private_job_queues q set locked_by = null, locked_at = null
         from stray where q.id = stray.job_queue_id and q.locked_by = any($1::text[])
     )
     update graphile_worker._private_jobs j set locked_by = null, locked_at = null
       from stray where j.id = stray.id
     returning j.id::text`,
    [pools, STRAY_AFTER_MS, held],
  );
  return rows.map((r) => r.id);
}

/** How long a connection for graphile-worker is retried while PostgreSQL cannot be reached. */
const CONNECT_RETRY_MS = 60_000;

/** The pool as graphile-worker sees it (see gatedPool). */
export interface GatedPool extends pg.Pool {
  /**
   * Resolves when every client graphile-worker took for a statement is back, or after `timeoutMs`.
   * graphile-worker sends a job's completion (or failure) without waiting for it, and its runner's
   * `stop()` resolves before that statement ends: a worker that closes its pool then would cut it,
   * and the job would stay locked by a pool that no longer runs it.
   */
  settled(timeoutMs: number): Promise<void>;
}

/** A statement that opens or ends an explicit transaction (graphile-worker's migrations). */
const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
const END = /^\s*(commit|rollback|end|abort)\b/i;

/**
 * The pool as graphile-worker sees it: `connect()` (both its promise and its callback forms) first
 * waits for `gate`. graphile-worker takes every job-locking and LISTEN connection through
 * `connect()`, so no job can be locked by a pool before the gate opens.
 *
 * While PostgreSQL cannot be reached (`isDatabaseUnavailable`), or the gate fails because the
 * registration it waits for could not reach it, `connect()` waits and tries again (backoff up to
 * 5 s, for at most a minute) instead of failing. A statement outside a transaction whose
 * connection is lost under it is sent again on a new connection, for the same minute: graphile-
 * worker retries only a few SQLSTATEs, and the statements it runs without waiting for them (a
 * job's completion or failure) would otherwise end in an unhandled rejection and leave the job
 * locked by a live pool, which no sweep releases. Its statements are safe to send twice: marking a
 * job complete or failed matches only a job still locked by this pool, and a job fetch that locked
 * a job before its connection broke leaves what any lost fetch leaves. The callback form (its
 * LISTEN connection, which it watches and replaces itself) gets the client as it is.
 */
export function gatedPool(pool: pg.Pool, gate: () => Promise<void>): GatedPool {
  const connect = async (target: pg.Pool): Promise<pg.PoolClient> => {
    const started = Date.now();
    for (let delay = 100; ; delay = Math.min(delay * 2, 5_000)) {
      try {
        await gate();
        return await target.connect();
      } catch (e) {
        const retryable = isDatabaseUnavailable(e) || (e as Error).message?.startsWith('worker registration failed');
        if (!retryable || Date.now() - started > CONNECT_RETRY_MS) throw e;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  };
  let out = 0;
  const waiting = new Set<() => void>();
  const back = () => {
    if (--out > 0) return;
    for (const w of waiting) w();
    waiting.clear();
  };
  const settled = (timeoutMs: number) =>
    out === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(t);
            waiting.delete(done);
            resolve();
          };
          const t = setTimeout(done, timeoutMs);
          t.unref();
          waiting.add(done);
        });
  /** A client from the promise form of `connect()`; counted until released. */
  const statementClient = async (target: pg.Pool): Promise<pg.PoolClient> => {
    out++;
    let first: pg.PoolClient;
    try {
      first = await connect(target);
    } catch (e) {
      back();
      throw e;
    }
    let current: pg.PoolClient | undefined = first;
    let inTransaction = false;
    let released = false;
    const query = async (...args: unknown[]) => {
      const q = args[0] as string | { text?: string } | undefined;
      const text = typeof q === 'string' ? q : (q?.text ?? '');
      const started = Date.now();
      for (;;) {
        if (!current) current = await connect(target);
        try {
          const result = await (current.query as (...a: unknown[]) => Promise<unknown>)(...args);
          if (BEGIN.test(text)) inTransaction = true;
          else if (END.test(text)) inTransaction = false;
          return result;
        } catch (e) {
          if (inTransaction || !isDatabaseUnavailable(e) || Date.now() - started > CONNECT_RETRY_MS) throw e;
          const broken = current;
          current = undefined;
          broken.release(e as Error); // a released client with an error is closed, not pooled
        }
      }
    };
    const release = (err?: Error | boolean) => {
      if (released) return;
      released = true;
      current?.release(err);
      current = undefined;
      back();
    };
    return new Proxy(first, {
      get(_target, prop) {
        if (prop === 'query') return query;
        if (prop === 'release') return release;
        const c = current ?? first;
        const v = Reflect.get(c, prop, c);
        return typeof v === 'function' ? v.bind(c) : v;
      },
    });
  };
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'settled') return settled;
      if (prop === 'connect') {
        return (cb?: (err: Error | undefined, client?: pg.PoolClient, done?: () => void) => void) => {
          if (typeof cb === 'function') {
            connect(target).then(
              (client) => cb(undefined, client, () => client.release()),
              (e: Error) => cb(e, undefined, () => {}),
            );
            return undefined;
          }
          return statementClient(target);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as GatedPool;
}
