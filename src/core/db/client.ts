/** pg Pool + Kysely, one per DSN. Every pool gets an error listener (a dropped idle client must not crash the process). */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Logger } from '../log.ts';
import { metrics } from '../observability/metrics.ts';
import { recordDbSpan } from '../observability/tracing.ts';
import { bindEngine, type Engine, EngineTag } from './engine.ts';
import type { CoreDatabase } from './schema.ts';

/** `DB`: the tables the handle is typed with (the composition root's whole `Database`; the core's own by default). */
export interface DatabaseHandle<DB = CoreDatabase> {
  db: Kysely<DB>;
  pool: pg.Pool;
  destroy(): Promise<void>;
}

// int8 (COUNT(*), bigserial) as JS numbers: our counts and ids stay far below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export function createDatabase<DB = CoreDatabase>(
  url: string,
  opts: { max?: number; log?: Logger; applicationName?: string; connectTimeoutMs?: number; engine?: Engine } = {},
): DatabaseHandle<DB> {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    types,
    application_name: opts.applicationName ?? 'gatehouse',
    idleTimeoutMillis: 30_000,
    // A black-holed server must fail a request (503), not hold it until the OS gives up on the socket.
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
    keepAlive: true,
  });
  let destroyed = false;
  // After destroy() began, a server-side close of a connection that is being ended is expected.
  const onError = (err: Error) =>
    opts.log?.[destroyed ? 'debug' : 'warn']({ code: (err as { code?: string }).code }, 'database connection closed');
  pool.on('error', onError);
  // graphile-worker checks that clients handed out have error listeners too.
  pool.on('connect', (client) => {
    client.on('error', onError);
  });
  const engine = opts.engine ?? 'postgres';
  bindEngine(pool, engine);
  const db = new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    // CockroachDB: tagged so that engineOf() answers for this instance and its transactions.
    ...(engine === 'postgres' ? {} : { plugins: [new EngineTag(engine)] }),
    // Every statement: its latency in the metrics and, when traced, a child span of the active one.
    log(event) {
      const failed = event.level === 'error';
      metrics.dbQueryDuration.observe({ outcome: failed ? 'error' : 'ok' }, event.queryDurationMillis / 1000);
      recordDbSpan(event.query.sql, event.queryDurationMillis, failed);
    },
  });
  return {
    db,
    pool,
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      // Let clients that are still being released (a worker's LISTEN client) come back first.
      const deadline = Date.now() + 2_000;
      while (pool.totalCount > pool.idleCount && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await db.destroy();
      // kysely ends the pool only if it ever used it.
      if (!pool.ended) await pool.end();
    },
  };
}
