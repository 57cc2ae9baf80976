/**
 * gatehouse on a real CockroachDB for the data, with the job queue on the local PostgreSQL
 * (`queue.dsn`): the migrations (with the sql/cockroach/ variants), an OAuth 2.0 client_credentials
 * grant, an authorization code flow and a refresh, and a SCIM user create and PATCH, through the
 * real HTTP apps.
 *
 * Where the CockroachDB comes from, in this order:
 * - `GATEHOUSE_COCKROACH_URL`: a running server (for example `cockroach start-single-node
 *   --insecure --store=type=mem,size=1GiB`), as a postgres:// or cockroach:// URL; each run creates
 *   a database of its own on it;
 * - else a container through `@testcontainers/cockroachdb` (image `GATEHOUSE_COCKROACH_IMAGE`,
 *   default cockroachdb/cockroach:v24.1.5) when a container engine answers.
 * With neither, the file prints that it did NOT run and why, and skips; with
 * GATEHOUSE_REQUIRE_COCKROACH=1 that is a failure instead.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../../../src/core/db/client.ts';
import { listMigrationFiles, migrate, SQL_DIR } from '../../../src/core/db/migrate.ts';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { API_KEY, createDirectory, scimClient } from '../../helpers/dsync.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { codeTokens, introspect, refresh, tokenRequest } from '../../helpers/tokens.ts';
import { scimUser } from '../../helpers/webhooks.ts';
import { dockerAvailable } from '../../setup/docker.ts';

const EXTERNAL = process.env.GATEHOUSE_COCKROACH_URL?.trim() || undefined;
const REQUIRED = process.env.GATEHOUSE_REQUIRE_COCKROACH === '1';
const IMAGE = process.env.GATEHOUSE_COCKROACH_IMAGE || 'cockroachdb/cockroach:v24.1.5';
const DOCKER = EXTERNAL ? false : await dockerAvailable();
const AVAILABLE = !!EXTERNAL || DOCKER;
if (!AVAILABLE) {
  console.warn(
    'CockroachDB test NOT RUN: no container engine answers (no Docker socket, DOCKER_HOST unset) and GATEHOUSE_COCKROACH_URL is not set; neither the npm registry nor Debian ships a CockroachDB server binary. What ran instead: the static check (test/unit/core/cockroach-sql.test.ts) and the CockroachDB code paths on PostgreSQL (test/http/core/cockroach-engine.test.ts).',
  );
}

const asPostgres = (url: string) => {
  const u = new URL(url);
  u.protocol = 'postgres:';
  return u;
};

describe.runIf(AVAILABLE || REQUIRED)('on a real CockroachDB (queue on PostgreSQL)', () => {
  let stopServer: () => Promise<void> = async () => {};
  let dropData: () => Promise<void> = async () => {};
  let queue: TestDatabase;
  let t: TestServer;
  let version = '';

  beforeAll(async () => {
    if (!AVAILABLE) throw new Error('GATEHOUSE_REQUIRE_COCKROACH=1 but no CockroachDB can be reached or started');
    let data: URL;
    if (EXTERNAL) {
      const admin = asPostgres(EXTERNAL);
      const name = `gh_crdb_${randomBytes(4).toString('hex')}`;
      const c = new pg.Client({ connectionString: admin.toString() });
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      data = new URL(admin.toString());
      data.pathname = `/${name}`;
      dropData = async () => {
        const d = new pg.Client({ connectionString: admin.toString() });
        await d.connect();
        await d.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => {});
        await d.end();
      };
    } else {
      const { CockroachDbContainer } = await import('@testcontainers/cockroachdb');
      const container = await new CockroachDbContainer(IMAGE).start();
      data = asPostgres(container.getConnectionUri());
      stopServer = async () => {
        await container.stop();
      };
    }
    queue = await createTestDatabase({ empty: true });
    const queuePool = new pg.Pool({ connectionString: queue.url, max: 2 });
    queuePool.on('error', () => {});
    queuePool.on('connect', (c) => c.on('error', () => {}));
    const h = createDatabase(data.toString(), { max: 2, engine: 'cockroach' });
    try {
      version = String((await h.pool.query('SELECT version()')).rows[0]?.version ?? '');
      await migrate(h.pool, { queuePool });
    } finally {
      await h.destroy();
      await queuePool.end();
    }
    const dsn = new URL(data.toString());
    dsn.protocol = 'cockroach:';
    t = await startTestServer({
      database: { url: data.toString(), name: data.pathname.slice(1), drop: async () => {} },
      overrides: { dsn: dsn.toString(), 'queue.dsn': queue.url, 'dsync.api_keys': [API_KEY] },
    });
  }, 240_000);

  afterAll(async () => {
    await t?.close();
    await dropData();
    await stopServer();
    await queue?.drop();
  }, 120_000);

  it('is CockroachDB, with every migration applied (the CockroachDB variants in place)', async () => {
    expect(version).toMatch(/CockroachDB/);
    const { rows } = await t.container.pool.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM gatehouse_schema_migrations ORDER BY version',
    );
    const files = listMigrationFiles(SQL_DIR, 'cockroach');
    expect(rows.map((r) => [Number(r.version), r.checksum])).toEqual(files.map((f) => [f.version, f.checksum]));
  });

  it('OAuth 2.0: client_credentials, then an authorization code flow and a refresh', async () => {
    const machine = await createClient(t, {
      grant_types: ['client_credentials'],
      response_types: ['token'],
      scope: 'read',
    });
    const cc = await tokenRequest(t, machine, { grant_type: 'client_credentials', scope: 'read' });
    expect(cc.status).toBe(200);
    expect((await introspect(t, cc.body.access_token)).body).toMatchObject({ active: true, sub: machine.client_id });

    const app = await createClient(t);
    const first = await codeTokens(t, app, 'openid offline');
    expect(first.refresh_token).toBeTruthy();
    const second = await refresh(t, app, first.refresh_token as string);
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect((await introspect(t, second.body.access_token)).body).toMatchObject({ active: true, sub: 'alice' });
    // The used refresh token is spent.
    expect((await introspect(t, first.refresh_token as string)).body.active).toBe(false);
  });

  it('SCIM: create a user, PATCH it, read it back', async () => {
    const dir = await createDirectory(t);
    const scim = scimClient(t, dir);
    const created = await scim('POST', '/Users', scimUser(1));
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const patched = await scim('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(patched.status).toBe(200);
    const read = await scim('GET', `/Users/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id, userName: 'user1@example.com', active: false });
    // The userName is unique per directory, case-insensitively (expression index + lock rows).
    expect((await scim('POST', '/Users', scimUser(1, { userName: 'USER1@example.com' }))).status).toBe(409);
  });
});
