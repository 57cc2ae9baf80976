/** A fresh database per test file, cloned from the migrated template (fast: no migrations per file). */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export function databaseUrl(base: string, db: string): string {
  const u = new URL(base);
  u.pathname = `/${db}`;
  return u.toString();
}

async function adminQuery(text: string): Promise<void> {
  const c = new pg.Client({ connectionString: inject('pgAdminUrl') });
  c.on('error', () => {});
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `gh_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  // Cloning needs the template to have no other sessions; retry briefly when parallel files clone at once.
  for (let attempt = 0; ; attempt++) {
    try {
      await adminQuery(
        opts.empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`,
      );
      break;
    } catch (e) {
      if (attempt >= 20 || !/being accessed by other users/.test((e as Error).message)) throw e;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    }
  }
  return {
    url: databaseUrl(inject('pgAdminUrl'), name),
    name,
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
