/**
 * Jackson's `controllers()` options as an embedder passes them: `logger`, `dsync.debugWebhooks`
 * (redacted bodies and answers), `providers.google.cronInterval`, `db.pageLimit`, an optional
 * `db.encryptionKey` with engine 'sql', and clear errors for the engines gatehouse does not run on.
 */
import { controllers } from 'gatehouse';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEvent } from '../../../src/dsync/types.ts';
import { eventually, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { startDsyncServer } from '../../helpers/dsync.ts';
import { type FakeGoogle, googleUser, startFakeGoogle } from '../../helpers/fake-google.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';

const EXTERNAL = 'https://my-cool-app.com';
let s: TestServer;

beforeAll(async () => {
  s = await startDsyncServer();
});
afterAll(async () => {
  await s?.close();
});

function capture() {
  const lines: { level: string; message: string; fields: unknown[] }[] = [];
  const at =
    (level: string) =>
    (message: string, ...fields: unknown[]) =>
      void lines.push({ level, message, fields });
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('controllers() options', () => {
  it('refuses the engines and database types gatehouse does not run on, with the reason', async () => {
    for (const engine of ['mongo', 'redis', 'planetscale', 'dynamodb'] as const)
      await expect(controllers({ externalUrl: EXTERNAL, db: { engine } })).rejects.toThrow(
        new RegExp(`db.engine '${engine}' is not supported: gatehouse keeps directory sync in PostgreSQL`),
      );
    await expect(controllers({ externalUrl: EXTERNAL, db: { engine: 'sql', type: 'mysql' } })).rejects.toThrow(
      /db.type 'mysql' is not supported/,
    );
  });

  it('without an encryption key (nor SECRETS_SYSTEM) stores secrets unencrypted and says so loudly to the logger', async () => {
    const saved = process.env.SECRETS_SYSTEM;
    delete process.env.SECRETS_SYSTEM;
    const { lines, logger } = capture();
    try {
      const lib = await controllers({ externalUrl: EXTERNAL, db: { engine: 'sql', url: s.database.url }, logger });
      try {
        const d = await lib.directorySyncController.directories.create({ tenant: 'nokey', product: 'p' });
        expect(d.error).toBeNull();
        expect((await lib.directorySyncController.directories.get(d.data?.id as string)).data?.scim.secret).toBe(
          d.data?.scim.secret,
        );
      } finally {
        await lib.close();
      }
    } finally {
      if (saved !== undefined) process.env.SECRETS_SYSTEM = saved;
    }
    const warning = lines.find((l) => l.level === 'error' && /WITHOUT ENCRYPTION/.test(l.message));
    expect(warning).toBeDefined();
  });

  it('uses SECRETS_SYSTEM when set: the service (same secret) reads what the library stored', async () => {
    const saved = process.env.SECRETS_SYSTEM;
    process.env.SECRETS_SYSTEM = TEST_SECRET;
    try {
      const lib = await controllers({ externalUrl: EXTERNAL, db: { engine: 'sql', url: s.database.url } });
      try {
        const d = (await lib.directorySyncController.directories.create({ tenant: 'envkey', product: 'p' })).data;
        const viaService = await s.container.dsync.services.directories.get(d?.id);
        expect(viaService.scim.secret).toBe(d?.scim.secret);
      } finally {
        await lib.close();
      }
    } finally {
      if (saved === undefined) delete process.env.SECRETS_SYSTEM;
      else process.env.SECRETS_SYSTEM = saved;
    }
  });

  it('db.pageLimit caps every list, the SCIM lists included', async () => {
    const lib = await controllers({
      externalUrl: EXTERNAL,
      db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET, pageLimit: 2 },
    });
    try {
      const ctl = lib.directorySyncController;
      const d = (await ctl.directories.create({ tenant: 'pages', product: 'p' })).data!;
      const users = ctl.users.setTenantAndProduct('pages', 'p');
      for (let i = 0; i < 3; i++)
        await users.create({ directoryId: d.id, email: `p${i}@example.com`, raw: { userName: `p${i}@example.com` } });
      expect((await users.getAll({ directoryId: d.id })).data).toHaveLength(2);
      expect((await users.getAll({ directoryId: d.id, pageLimit: 50 })).data).toHaveLength(2);
      const r = await ctl.requests.handle({
        method: 'GET',
        directoryId: d.id,
        resourceType: 'Users',
        apiSecret: d.scim.secret,
        query: {},
      });
      // itemsPerPage: the count asked for (none: 0), as Jackson answers for users.
      expect(r.data).toMatchObject({ totalResults: 3, itemsPerPage: 0 });
      expect((r.data as { Resources: unknown[] }).Resources).toHaveLength(2);
    } finally {
      await lib.close();
    }
  });

  describe('dsync.debugWebhooks', () => {
    let rx: Receiver;
    beforeAll(async () => {
      rx = await startReceiver(() => 200);
    });
    afterAll(async () => {
      await rx?.close();
    });

    it('logs every webhook body and answer at info, redacted', async () => {
      const { lines, logger } = capture();
      const lib = await controllers({
        externalUrl: EXTERNAL,
        db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET },
        dsync: { debugWebhooks: true },
        logger,
        worker: true,
      });
      try {
        const ctl = lib.directorySyncController;
        const d = (
          await ctl.directories.create({ tenant: 'debug', product: 'p', webhook_url: rx.url, webhook_secret: 'whsec' })
        ).data!;
        const r = await ctl.requests.handle({
          method: 'POST',
          directoryId: d.id,
          resourceType: 'Users',
          apiSecret: d.scim.secret,
          body: { userName: 'secret.person@example.com', name: { givenName: 'Secret', familyName: 'Person' } },
        });
        expect(r.status).toBe(201);
        const line = await eventually(async () => lines.find((l) => l.message === 'dsync webhook'));
        const fields = line.fields[0] as { body: WebhookEvent; status: number; endpoint: string };
        expect(fields.status).toBe(200);
        // The path is kept; the address is masked by the log redaction (no IPs in logs).
        expect(fields.endpoint).toMatch(/^http:\/\/\[address\]:\d+\/hook$/);
        expect(fields.body).toMatchObject({ event: 'user.created', tenant: 'debug', directory_id: d.id });
        expect((fields.body.data as { email: string }).email).toBe('[redacted]');
        const all = JSON.stringify(lines);
        expect(all).not.toContain('secret.person@example.com');
        expect(all).not.toContain('whsec');
      } finally {
        await lib.close();
      }
    });
  });

  describe('providers.google.cronInterval', () => {
    let google: FakeGoogle;
    beforeAll(async () => {
      google = await startFakeGoogle();
    });
    afterAll(async () => {
      await google?.close();
    });

    it('syncs the Google directories on the interval, in seconds', async () => {
      const seen: WebhookEvent[] = [];
      const lib = await controllers({
        externalUrl: EXTERNAL,
        db: { engine: 'sql', url: s.database.url, encryptionKey: TEST_SECRET },
        dsync: {
          callback: (e) => void seen.push(e),
          providers: {
            google: {
              clientId: google.clientId,
              clientSecret: google.clientSecret,
              authUrl: google.authUrl,
              tokenUrl: google.tokenUrl,
              apiUrl: google.apiUrl,
              cronInterval: 1,
            },
          },
        },
      });
      try {
        const ctl = lib.directorySyncController;
        const d = (await ctl.directories.create({ tenant: 'cron', product: 'p', type: 'google' })).data!;
        const t = await ctl.google.getAccessToken({
          directoryId: d.id,
          code: google.issueCode(`${EXTERNAL}/api/scim/oauth/callback`),
        });
        await ctl.google.setToken({
          directoryId: d.id,
          accessToken: t.data?.access_token as string,
          refreshToken: t.data?.refresh_token as string,
        });
        google.users = [googleUser(1)];
        await eventually(async () => {
          const { rows } = await sql<{ n: number }>`
              select count(*)::int as n from dsync_users where directory_id = ${d.id}`.execute(s.container.db);
          return rows[0]?.n === 1;
        }, 15_000);
      } finally {
        await lib.close();
      }
    }, 30_000);
  });
});
