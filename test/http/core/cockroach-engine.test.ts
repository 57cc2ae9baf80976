/**
 * The CockroachDB code paths that can run without a CockroachDB server, on the real PostgreSQL:
 * the start-up rule on `queue.dsn` (against a fake server that answers `SELECT version()` as
 * CockroachDB), the engine-tuned serialization retry, the lock-table named locks, and the
 * migrator on a CockroachDB-tagged pool (variant files, row lock, no graphile-worker schema).
 * These show the mechanisms; whether CockroachDB accepts the statements is what
 * test/unit/core/cockroach-sql.test.ts checks statically and test/http/core/cockroach.test.ts checks
 * on a real server where one can be started.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type DatabaseHandle } from '../../../src/core/db/client.ts';
import { assertQueueEngine, EngineError, engineOf, RETRY_POLICY } from '../../../src/core/db/engine.ts';
import { lockBucket, lockNames, tryLockName } from '../../../src/core/db/locks.ts';
import { listMigrationFiles, migrate, SQL_DIR } from '../../../src/core/db/migrate.ts';
import { migrationChecksum } from '../../../src/core/db/migration-checksum.ts';
import { withTx } from '../../../src/core/db/tx.ts';
import { eventually } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { COCKROACH_VERSION, type FakePg, startFakePg } from '../../helpers/fake-pg.ts';

const serialization = () => Object.assign(new Error('restart transaction'), { code: '40001' });

describe('CockroachDB for the data: start-up rule on queue.dsn', () => {
  let fake: FakePg;
  beforeAll(async () => {
    fake = await startFakePg(COCKROACH_VERSION);
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('the rule itself', () => {
    expect(() => assertQueueEngine('postgres://u@h/db', '')).not.toThrow();
    expect(() => assertQueueEngine('cockroach://u@h:26257/db', 'postgres://u@q/queue')).not.toThrow();
    expect(() => assertQueueEngine('cockroachdb://u@h:26257/db', '')).toThrow(EngineError);
    expect(() => assertQueueEngine('cockroach://u@h:26257/db', '')).toThrow(/set queue\.dsn \(QUEUE_DSN\)/);
    expect(() => assertQueueEngine('cockroach://u@h:26257/db', 'cockroach://u@h:26257/q')).toThrow(
      /queue\.dsn is CockroachDB.*graphile-worker runs only on PostgreSQL/,
    );
    expect(() => assertQueueEngine('cockroach://u@h:26257/db', 'memory')).toThrow(/queue\.dsn is memory/);
    expect(() => assertQueueEngine('cockroach://u@h:26257/db', 'mysql://x')).toThrow(/expected a postgres:\/\//);
  });

  it('`migrate sql` and `serve all` on a CockroachDB dsn without a PostgreSQL queue stop with one line', async () => {
    const env = {
      DSN: `cockroach://root@127.0.0.1:${fake.port}/defaultdb?sslmode=disable`,
      SECRETS_SYSTEM: 'x'.repeat(32),
    };
    const before = fake.queries.length;
    const m = await runCli(['migrate', 'sql', '--yes'], env);
    expect(m.code).toBe(1);
    expect(m.stderr.trim().split('\n')).toHaveLength(1);
    expect(m.stderr).toMatch(/dsn is CockroachDB \(cockroach:\/\/\), which cannot hold the job queue: set queue\.dsn/);
    // The dialect check ran first (the server is CockroachDB), nothing else.
    expect(fake.queries.slice(before)).toEqual(['SELECT version()']);
    const s = await runCli(['serve', 'all'], {
      ...env,
      QUEUE_DSN: `cockroach://root@127.0.0.1:${fake.port}/queue`,
      SERVE_PUBLIC_PORT: '0',
      SERVE_ADMIN_PORT: '0',
    });
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/queue\.dsn is CockroachDB/);
    expect(s.stderr).not.toMatch(/at .*\.ts:\d+/);
  });
});

describe('CockroachDB for the data: engine-tagged handles on PostgreSQL', () => {
  let database: TestDatabase;
  let pg: DatabaseHandle;
  let crdb: DatabaseHandle;
  beforeAll(async () => {
    database = await createTestDatabase();
    pg = createDatabase(database.url, { max: 3 });
    crdb = createDatabase(database.url, { max: 3, engine: 'cockroach' });
  });
  afterAll(async () => {
    await pg?.destroy();
    await crdb?.destroy();
    await database?.drop();
  });

  it('engineOf: the instance, its pool and its transactions', async () => {
    expect(engineOf(pg.db)).toBe('postgres');
    expect(engineOf(pg.pool)).toBe('postgres');
    expect(engineOf(crdb.db)).toBe('cockroach');
    expect(engineOf(crdb.pool)).toBe('cockroach');
    await withTx(crdb.db, async (trx) => expect(engineOf(trx)).toBe('cockroach'));
    await crdb.db.transaction().execute(async (trx) => expect(engineOf(trx)).toBe('cockroach'));
    await withTx(pg.db, async (trx) => expect(engineOf(trx)).toBe('postgres'));
  });

  it('serialization retry: more attempts on CockroachDB, bounded on both', async () => {
    const failTimes = RETRY_POLICY.postgres.retries + 2;
    const run = (h: DatabaseHandle, retried: number[]) => {
      let n = 0;
      return withTx(
        h.db,
        async (trx) => {
          await sql`select 1`.execute(trx);
          if (++n <= failTimes) throw serialization();
          return n;
        },
        { onRetry: (a) => retried.push(a) },
      );
    };
    const onPg: number[] = [];
    await expect(run(pg, onPg)).rejects.toMatchObject({ code: '40001' });
    expect(onPg).toHaveLength(RETRY_POLICY.postgres.retries + 1);
    const onCrdb: number[] = [];
    await expect(run(crdb, onCrdb)).resolves.toBe(failTimes + 1);
    expect(onCrdb).toHaveLength(failTimes);
    expect(RETRY_POLICY.cockroach.retries).toBeGreaterThan(failTimes);
  }, 60_000);

  it('named locks on the lock table: a second holder waits, a try fails at once, both free at commit', async () => {
    // Distinct buckets for the three names used here.
    expect(new Set(['d1:user:alice', 'd1:user:bob', 'd1:user:carol'].map(lockBucket)).size).toBe(3);
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => {
      locked = r;
    });
    const first = withTx(crdb.db, async (trx) => {
      await lockNames(trx, ['d1:user:alice', 'd1:user:bob']);
      order.push('first locked');
      locked();
      await held;
      order.push('first commits');
    });
    await isLocked;
    expect(await crdb.db.transaction().execute((trx) => tryLockName(trx, 'd1:user:bob'))).toBe(false);
    expect(await crdb.db.transaction().execute((trx) => tryLockName(trx, 'd1:user:carol'))).toBe(true);
    const second = withTx(crdb.db, async (trx) => {
      await lockNames(trx, ['d1:user:bob']);
      order.push('second locked');
    });
    // The second holder's update of bob's bucket is waiting on the first's row lock.
    await eventually(async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query like 'update gatehouse_locks%'`.execute(pg.db);
      return (rows[0]?.n ?? 0) > 0;
    });
    expect(order).toEqual(['first locked']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first locked', 'first commits', 'second locked']);
    expect(await crdb.db.transaction().execute((trx) => tryLockName(trx, 'd1:user:bob'))).toBe(true);
    // The rows of the lock table were written (not advisory locks), and no row was added.
    const { rows } = await sql<{ taken: number; n: number }>`
      select count(*) filter (where taken > 0)::int as taken, count(*)::int as n from gatehouse_locks`.execute(pg.db);
    expect(rows[0]).toEqual({ taken: 3, n: 16_384 });
  }, 30_000);
});

describe('CockroachDB for the data: the migrator on a CockroachDB-tagged pool (run on PostgreSQL)', () => {
  let database: TestDatabase;
  let a: DatabaseHandle;
  let b: DatabaseHandle;
  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    a = createDatabase(database.url, { max: 3, engine: 'cockroach' });
    b = createDatabase(database.url, { max: 3, engine: 'cockroach' });
  });
  afterAll(async () => {
    await a?.destroy();
    await b?.destroy();
    await database?.drop();
  });

  it('two concurrent migrators: the variants are applied once, under the row lock, without graphile-worker', async () => {
    const [ra, rb] = await Promise.all([migrate(a.pool), migrate(b.pool)]);
    const all = listMigrationFiles(SQL_DIR);
    expect([...ra.applied, ...rb.applied].sort()).toEqual(all.map((f) => f.file));
    expect(Math.min(ra.applied.length, rb.applied.length)).toBe(0);
    const ledger = await a.pool.query<{ name: string; checksum: string }>(
      'select name, checksum from gatehouse_schema_migrations where version = 190',
    );
    const variant = readFileSync(join(SQL_DIR, 'cockroach', '0190_audit_events.sql'), 'utf8');
    expect(ledger.rows[0]?.checksum).toBe(migrationChecksum(variant));
    const triggers = await a.pool.query(
      "select tgname from pg_trigger where not tgisinternal and tgrelid in ('audit_events'::regclass, 'jwk_keys'::regclass, 'oauth2_clients'::regclass)",
    );
    expect(triggers.rows).toEqual([]);
    const seq = await a.pool.query(
      "select column_default from information_schema.columns where table_name = 'jwk_keys' and column_name = 'id'",
    );
    expect(seq.rows[0]?.column_default).toMatch(/nextval\('jwk_keys_id_seq'/);
    const collation = await a.pool.query(
      "select collation_name from information_schema.columns where table_name = 'oauth2_clients' and column_name = 'id'",
    );
    expect(collation.rows[0]?.collation_name).toBeNull();
    const gw = await a.pool.query("select 1 from pg_namespace where nspname = 'graphile_worker'");
    expect(gw.rows).toEqual([]);
    // The row lock left nothing behind.
    expect((await a.pool.query('select count(*)::int as n from gatehouse_migrate_lock')).rows[0]?.n).toBe(0);
    // A second run applies nothing and finds no changed file.
    expect((await migrate(b.pool)).applied).toEqual([]);
  }, 120_000);
});
