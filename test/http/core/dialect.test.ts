import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDialect, DialectError } from '../../../src/core/db/dialect.ts';
import { parseDsn } from '../../../src/core/db/dsn.ts';
import { runCli } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { COCKROACH_VERSION, type FakePg, startFakePg } from '../../helpers/fake-pg.ts';

describe('startup dialect check', () => {
  let fake: FakePg;
  let database: TestDatabase;
  beforeAll(async () => {
    fake = await startFakePg(COCKROACH_VERSION);
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await fake.close();
    await database.drop();
  });

  const client = async (url: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    return c;
  };

  it('refuses a CockroachDB server reached through postgres:// and names cockroach://', async () => {
    const c = await client(`postgres://root@127.0.0.1:${fake.port}/defaultdb`);
    const before = fake.queries.length;
    await expect(checkDialect(c, 'postgres')).rejects.toThrow(DialectError);
    await expect(checkDialect(c, 'postgres')).rejects.toThrow(/use a cockroach:\/\/ DSN/);
    expect(fake.queries.slice(before)).toEqual(['SELECT version()', 'SELECT version()']);
    await c.end();
  });

  it('accepts a CockroachDB server reached through cockroach://', async () => {
    const dsn = parseDsn(`cockroach://root@127.0.0.1:${fake.port}/defaultdb`);
    const c = await client(dsn.url);
    await expect(checkDialect(c, dsn.kind)).resolves.toBe('cockroach');
    await c.end();
  });

  it('refuses a PostgreSQL server reached through cockroach:// and names postgres://', async () => {
    const c = await client(database.url);
    await expect(checkDialect(c, 'cockroach')).rejects.toThrow(
      /server is PostgreSQL but the DSN uses cockroach:\/\/; use a postgres:\/\/ DSN/,
    );
    await expect(checkDialect(c, 'postgres')).resolves.toBe('postgres');
    await c.end();
  });

  it('stops `migrate sql` and `serve` with one line and exit code 1, after exactly one version query', async () => {
    const before = fake.queries.length;
    const env = { DSN: `postgres://root@127.0.0.1:${fake.port}/defaultdb`, SECRETS_SYSTEM: 'x'.repeat(32) };
    const m = await runCli(['migrate', 'sql', '--yes'], env);
    expect(m.code).toBe(1);
    expect(m.stderr.trim().split('\n')).toHaveLength(1);
    expect(m.stderr).toMatch(/CockroachDB.*use a cockroach:\/\/ DSN/);
    expect(fake.queries.slice(before)).toEqual(['SELECT version()']);
    const s = await runCli(['serve', 'all'], { ...env, SERVE_PUBLIC_PORT: '0', SERVE_ADMIN_PORT: '0' });
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/use a cockroach:\/\/ DSN/);
    const url = new URL(database.url);
    url.protocol = 'cockroach:';
    const r = await runCli(['migrate', 'sql', '--yes'], { ...env, DSN: url.toString() });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/use a postgres:\/\/ DSN/);
  });
});
