/**
 * Web processes through PgBouncer in transaction pooling mode (Debian's `pgbouncer`, started here
 * with a generated ini on a free port, 3 server connections for everything): OAuth2 and SCIM traffic
 * from two `serve all` processes at once works (no session state, no named prepared statements, only
 * transaction-scoped advisory locks on the web path), refresh rotation still lets one of 20
 * concurrent refreshes win, and a worker on `queue.direct_dsn` delivers the webhooks. A worker
 * given only the pooled DSN refuses to start and says why.
 * Where pgbouncer is not installed the suite says so and this file does not run (CI installs it;
 * with GATEHOUSE_REQUIRE_PGBOUNCER=1, as .ci/run sets, its absence fails the run).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createChangeFeed } from '../../../src/core/db/changes.ts';
import { behindTransactionPooler } from '../../../src/core/db/pooler.ts';
import { createLogger } from '../../../src/core/log.ts';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { API_KEY, createDirectory, scimClient } from '../../helpers/dsync.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { type Bouncer, findPgbouncer, startPgbouncer } from '../../helpers/pgbouncer.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import { codeTokens, introspect, refresh, revoke, tokenRequest } from '../../helpers/tokens.ts';
import { scimUser } from '../../helpers/webhooks.ts';

const BIN = findPgbouncer();
if (!BIN && process.env.GATEHOUSE_REQUIRE_PGBOUNCER !== '1') {
  console.warn(
    'PgBouncer test NOT RUN: the pgbouncer binary is not installed on this machine (apt-get install -y pgbouncer; .ci/run installs it).',
  );
}

describe.runIf(BIN || process.env.GATEHOUSE_REQUIRE_PGBOUNCER === '1')(
  'web processes through PgBouncer (transaction pooling)',
  () => {
    let db: TestDatabase;
    let bouncer: Bouncer;
    let fleet: Fleet;
    let rx: Receiver;
    const server = (i: number) =>
      ({ publicUrl: fleet.webs[i]?.publicUrl, adminUrl: fleet.webs[i]?.adminUrl }) as TestServer;

    beforeAll(async () => {
      if (!BIN) throw new Error('GATEHOUSE_REQUIRE_PGBOUNCER=1 but pgbouncer is not installed');
      db = await createTestDatabase();
      bouncer = await startPgbouncer(BIN, inject('pgAdminUrl'), { poolSize: 3 });
      rx = await startReceiver(() => 200);
      fleet = await startFleet({
        dsn: bouncer.url(db.name),
        webs: 2,
        workers: 1,
        env: { DSYNC_API_KEYS: API_KEY, DB_POOL_MAX: '8' },
        workerEnv: { QUEUE_DIRECT_DSN: db.url },
      });
      await Promise.all([fleet.startWeb(0), fleet.startWeb(1), fleet.startWorker(0)]);
    }, 150_000);

    afterAll(async () => {
      await fleet?.stop();
      await rx?.close();
      await bouncer?.stop();
      await db?.drop();
    });

    it('is detected as a transaction pooler; the direct connection is not', async () => {
      expect(await behindTransactionPooler(bouncer.url(db.name))).toBe(true);
      expect(await behindTransactionPooler(db.url)).toBe(false);
    });

    it('the change feed listens on a direct connection and never through the pooler', async () => {
      const lines: string[] = [];
      const log = createLogger({ level: 'warn', destination: { write: (l: string) => lines.push(l) } });
      const pooled = createChangeFeed({ url: bouncer.url(db.name), log });
      const direct = createChangeFeed({ url: db.url, log });
      try {
        pooled.live();
        await eventually(async () => direct.live(), 5000);
        await eventually(async () => lines.some((l) => l.includes('does not reach PostgreSQL directly')), 5000);
        // Other traffic through the pooler meanwhile cannot make it go live.
        for (let i = 0; i < 10; i++) {
          await behindTransactionPooler(bouncer.url(db.name), 1);
          expect(pooled.live()).toBe(false);
        }
        expect(lines.filter((l) => l.includes('does not reach PostgreSQL directly'))).toHaveLength(1);
      } finally {
        await pooled.close();
        await direct.close();
      }
    });

    it('a worker given only the pooled DSN refuses to start and says why', async () => {
      const r = await runCli(['worker'], { DSN: bouncer.url(db.name), SECRETS_SYSTEM: TEST_SECRET });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/transaction-pooling connection pooler/);
      expect(r.stderr).toMatch(/LISTEN\/NOTIFY/);
      expect(r.stderr).toMatch(/queue\.direct_dsn/);
      expect(r.stderr).not.toMatch(/at .*\.ts:\d+/); // one line, no stack
    });

    it('a worker whose queue.dsn goes through the pooler refuses to start and names queue.dsn', async () => {
      const r = await runCli(['worker'], {
        DSN: db.url,
        QUEUE_DSN: bouncer.url(db.name),
        SECRETS_SYSTEM: TEST_SECRET,
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/worker refused: queue\.dsn reaches PostgreSQL through a transaction-pooling/);
      expect(r.stderr).toMatch(/queue\.direct_dsn/);
      expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
    });

    it('a key added on one web process is published at once by the other (no LISTEN through the pooler)', async () => {
      const jwks = async (i: number) =>
        (
          (await (await fetch(`${server(i).publicUrl}/.well-known/jwks.json`)).json()) as {
            keys: Array<{ kid: string }>;
          }
        ).keys;
      // Both processes have built the published set, and each change feed has found the pooler and
      // stopped for good (a feed that went live through it would let the second serve a stale cache).
      expect((await jwks(0)).length).toBeGreaterThan(0);
      expect((await jwks(1)).length).toBeGreaterThan(0);
      for (const p of [fleet.web[0], fleet.web[1]])
        await eventually(async () =>
          p?.lines.some((l) => String(l.msg).includes('does not reach PostgreSQL directly')),
        );
      const before = (await jwks(1)).map((k) => k.kid);
      const r = await fetch(`${server(0).adminUrl}/admin/keys/hydra.openid.id-token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ alg: 'RS256', use: 'sig', kid: 'pgbouncer-new-key' }),
      });
      expect(r.status).toBe(201);
      expect(before).not.toContain('pgbouncer-new-key');
      expect((await jwks(1)).map((k) => k.kid)).toContain('pgbouncer-new-key');
    });

    it('serves OAuth2 and SCIM traffic from two web processes on 3 pooled server connections', async () => {
      const statuses: number[] = [];
      const note = <T extends { status: number }>(r: T) => {
        statuses.push(r.status);
        return r;
      };
      // SCIM: 3 directories, users created concurrently across both web processes.
      const dirs = await Promise.all(
        [0, 1, 2].map((k) =>
          createDirectory(server(k % 2), { tenant: `pgb${k}`, product: 'p', webhook_url: rx.url, webhook_secret: 's' }),
        ),
      );
      const scim = Promise.all(
        dirs.flatMap((d, k) =>
          Array.from({ length: 10 }, async (_, n) => {
            const r = note(await scimClient(server(n % 2), d)('POST', '/Users', scimUser(`${k}-${n}`)));
            expect(r.status).toBe(201);
          }),
        ),
      );
      // OAuth2: client credentials, introspection and revocation, concurrently, on both processes.
      const cc = await createClient(server(0), { grant_types: ['client_credentials'], response_types: ['token'] });
      const oauth = Promise.all(
        Array.from({ length: 20 }, async (_, n) => {
          const t = note(await tokenRequest(server(n % 2), cc, { grant_type: 'client_credentials' }));
          expect(t.status).toBe(200);
          const i = note(await introspect(server((n + 1) % 2), t.body.access_token));
          expect(i.body.active).toBe(true);
          if (n % 4 === 0) {
            expect(note(await revoke(server(n % 2), cc, t.body.access_token)).status).toBe(200);
            expect((await introspect(server((n + 1) % 2), t.body.access_token)).body.active).toBe(false);
          }
        }),
      );
      await Promise.all([scim, oauth]);

      // Refresh rotation under the pooler: one of 20 concurrent refreshes wins.
      const client = await createClient(server(1));
      const tok = await codeTokens(server(0), client);
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => refresh(server(i % 2), client, tok.refresh_token as string)),
      );
      for (const r of replies) note(r);
      expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
      expect(replies.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19);

      expect(statuses.filter((s) => s >= 500)).toEqual([]);
      // The worker (direct connection) delivered every event, in order per directory.
      await eventually(async () => rx.delivered().length === 30, 20_000);
      for (const d of dirs) {
        const seqs = rx
          .delivered()
          .filter((r) => r.body.directory_id === d.id)
          .map((r) => r.body.seq);
        expect(seqs).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
      }
      // The web processes really went through the pooler, and it reported no broken statements.
      expect(bouncer.log()).toMatch(new RegExp(`login attempt: db=${db.name}`));
      expect(bouncer.log()).not.toMatch(/prepared statement/i);
    }, 60_000);
  },
);
