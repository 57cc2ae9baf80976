/**
 * Hydra's CLI where users script it, against a running server: `migrate sql [up] [DSN] [-e]`,
 * `migrate status [DSN]`, `import oauth2-client`, `import jwk`, `--skip-tls-verify` on client
 * commands (against an https admin listener) and `serve … --sqa-opt-out`.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_NETWORK_ID as NID } from '../../../src/oauth2/tables.ts';
import { startTestServer, TEST_SECRET, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { selfSigned } from '../../helpers/tls.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-hydra-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('migrate sql and migrate status, Hydra’s forms', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
  });
  afterAll(async () => db?.drop());

  it('takes the DSN as an argument (no secrets needed) and prints each migration with its duration', {
    timeout: 120_000,
  }, async () => {
    const r = await runCli(['migrate', 'sql', 'up', db.url, '--yes'], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('applying '))).not.toHaveLength(0);
    for (const l of lines.filter((x) => x.startsWith('applying '))) {
      expect(l).toMatch(/^applying \d{4}_[a-z0-9_]+\.sql … done in \d+(ms|\.\d\ds)$/);
    }
    expect(lines.at(-1)).toMatch(/^applied \d+ migration\(s\) in \d+(ms|\.\d\ds)$/);
  });

  it('reads the DSN from the environment with -e, and says so when it is missing', { timeout: 120_000 }, async () => {
    const r = await runCli(['migrate', 'sql', '-e', '--yes'], { DSN: db.url });
    expect([r.code, r.stdout.trim()]).toEqual([0, 'the database is up to date']);
    const missing = await runCli(['migrate', 'sql', '-e', '--yes'], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('--read-from-env: the DSN environment variable is not set');
    const positional = await runCli(['migrate', 'sql', db.url, '--yes'], {});
    expect([positional.code, positional.stdout.trim()]).toEqual([0, 'the database is up to date']);
  });

  it('refuses an argument that is neither a direction nor a DSN, with exit code 1', { timeout: 120_000 }, async () => {
    const r = await runCli(['migrate', 'sql', 'sideways', '--yes'], {});
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe('migrate sql sideways: expected up, down or a DSN (postgres://…)');
  });

  it('migrate status takes a DSN too', { timeout: 120_000 }, async () => {
    const r = await runCli(['migrate', 'status', db.url], {});
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^applied {2}0001_networks\.sql/m);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('nothing pending');
  });
});

describe('import oauth2-client and import jwk', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('imports clients from files (an array, or one object) and from stdin; failures exit 1 and name the source', {
    timeout: 120_000,
  }, async () => {
    const many = join(dir, 'clients.json');
    writeFileSync(
      many,
      JSON.stringify([
        { client_id: 'imp-1', client_secret: 'imp-1-secret-long-enough', grant_types: ['client_credentials'] },
        { client_id: 'imp-2', grant_types: ['client_credentials'], scope: 'read' },
      ]),
    );
    const single = join(dir, 'single.json');
    writeFileSync(single, JSON.stringify({ client_id: 'imp-3', grant_types: ['client_credentials'] }));
    const r = await runCli(['import', 'oauth2-client', many, single, '-e', s.adminUrl, '--format', 'json'], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { client_id: string; client_secret?: string }[];
    expect(out.map((c) => c.client_id)).toEqual(['imp-1', 'imp-2', 'imp-3']);
    expect(out[0]?.client_secret).toBe('imp-1-secret-long-enough');
    expect(out[1]?.client_secret).toMatch(/.{20,}/); // generated, shown once
    expect((await fetch(`${s.adminUrl}/admin/clients/imp-2`)).status).toBe(200);

    // stdin, table output (the default), one client.
    const viaStdin = await runCli(
      ['import', 'client', '-e', s.adminUrl],
      {},
      30_000,
      JSON.stringify([{ client_id: 'imp-4', grant_types: ['client_credentials'] }]),
    );
    expect(viaStdin.code).toBe(0);
    expect(viaStdin.stdout).toMatch(/^CLIENT ID\t+imp-4\t*$/m);

    // An existing client is not updated: that one fails, the others are imported, exit code 1.
    const again = join(dir, 'again.json');
    writeFileSync(
      again,
      JSON.stringify([
        { client_id: 'imp-1', grant_types: ['client_credentials'] },
        { client_id: 'imp-5', grant_types: ['client_credentials'] },
      ]),
    );
    const dup = await runCli(['import', 'oauth2-client', again, '-e', s.adminUrl, '--quiet'], {});
    expect(dup.code).toBe(1);
    expect(dup.stdout).toBe('imp-5\n');
    expect(dup.stderr).toMatch(new RegExp(`^error: ${again}\\[0\\]: 409 `));

    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '[{');
    const bad = await runCli(['import', 'oauth2-client', broken, '-e', s.adminUrl], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: could not decode JSON from .*broken\.json/);
  });

  it('imports keys from a PEM private key, a JWK and stdin into a set', { timeout: 120_000 }, async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = join(dir, 'ec.pem');
    writeFileSync(pem, privateKey.export({ format: 'pem', type: 'pkcs8' }));
    const jwkFile = join(dir, 'pub.json');
    writeFileSync(jwkFile, JSON.stringify({ ...publicKey.export({ format: 'jwk' }), kid: 'pub-1', alg: 'ES256' }));

    const noAlg = await runCli(['import', 'jwk', 'imported', pem, '-e', s.adminUrl], {});
    expect(noAlg.code).toBe(1);
    expect(noAlg.stderr.trim()).toBe(`error: ${pem}: --alg is required when the imported key does not define "alg"`);

    const r = await runCli(['import', 'jwk', 'imported', pem, jwkFile, '--alg', 'ES256', '-e', s.adminUrl], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = r.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^SET ID\t+KEY ID\t+ALGORITHM\t+USE\t*$/);
    expect(rows).toHaveLength(3);
    expect(rows[2]).toMatch(/^imported\t+pub-1\t+ES256\t+sig\t*$/);

    const ed = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const viaStdin = await runCli(
      ['import', 'jwk', 'imported', '--alg', 'EdDSA', '--use', 'sig', '-e', s.adminUrl, '--format', 'json'],
      {},
      30_000,
      ed,
    );
    expect(viaStdin.code).toBe(0);
    const j = JSON.parse(viaStdin.stdout);
    expect(j.set).toBe('imported');
    expect(j.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });

    const set = (await (await fetch(`${s.adminUrl}/admin/keys/imported`)).json()) as { keys: { kid: string }[] };
    expect(set.keys).toHaveLength(3);
    expect(set.keys.map((k) => k.kid)).toContain('pub-1');

    const garbage = join(dir, 'garbage.pem');
    writeFileSync(garbage, 'hello');
    const g = await runCli(['import', 'jwk', 'imported', garbage, '--alg', 'ES256', '-e', s.adminUrl], {});
    expect(g.code).toBe(1);
    expect(g.stderr.trim()).toBe(`error: ${garbage}: could not decode a private or public key (JWK, PEM or DER)`);
  });
});

describe('revoke login-sessions', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('ends every login session of a subject in batches, with plain progress lines off a terminal', {
    timeout: 120_000,
  }, async () => {
    const db = s.container.db;
    for (let i = 0; i < 5; i++) {
      await sql`insert into oauth2_login_sessions (nid, id, subject, authenticated_at, remember, expires_at)
        values (${NID}, ${`ls-alice-${i}`}, 'alice', now(), true, now() + interval '1 hour')`.execute(db);
    }
    await sql`insert into oauth2_login_sessions (nid, id, subject, authenticated_at, remember, expires_at)
      values (${NID}, 'ls-bob', 'bob', now(), true, now() + interval '1 hour')`.execute(db);
    const r = await runCli(['revoke', 'login-sessions', '--subject', 'alice', s.database.url], {
      SECRETS_SYSTEM: TEST_SECRET,
      OAUTH2_SESSION_REVOCATION_BATCH_SIZE: '2',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('5 login session(s) of "alice" ended; 0 back-channel logout notification(s) queued\n');
    expect(r.stderr).toMatch(/^revoke login-sessions: 5\/5 rows, \d+ rows\/s$/m);
    const { rows } = await sql<{ id: string }>`select id from oauth2_login_sessions order by id`.execute(db);
    expect(rows.map((x) => x.id)).toEqual(['ls-bob']);
    const none = await runCli(['revoke', 'login-sessions', '--subject', 'alice', s.database.url, '--json'], {
      SECRETS_SYSTEM: TEST_SECRET,
    });
    expect([none.code, none.stderr]).toEqual([0, '']);
    expect(JSON.parse(none.stdout)).toEqual({ deleted: 0, notified: 0, complete: true });
    const missing = await runCli(['revoke', 'login-sessions', s.database.url], { SECRETS_SYSTEM: TEST_SECRET });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/required option '--subject <subject>' not specified/);
  });
});

describe('--skip-tls-verify against an https admin listener', () => {
  let s: TestServer;
  let adminUrl: string;
  beforeAll(async () => {
    const pair = selfSigned('localhost');
    s = await startTestServer({
      overrides: {
        'serve.tls.cert.base64': Buffer.from(pair.cert).toString('base64'),
        'serve.tls.key.base64': Buffer.from(pair.key).toString('base64'),
      },
    });
    adminUrl = s.serving.admin?.url as string;
  });
  afterAll(async () => s?.close());

  it('is refused without the flag and works with it on client, key, import and token commands', {
    timeout: 120_000,
  }, async () => {
    expect(adminUrl).toMatch(/^https:\/\//);
    const refused = await runCli(['list', 'oauth2-clients', '-e', adminUrl], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: cannot reach https:\/\/127\.0\.0\.1:\d+ \(/);

    const created = await runCli(
      [
        'create',
        'oauth2-client',
        '--id',
        'tls-c',
        '--grant-type',
        'client_credentials',
        '-e',
        adminUrl,
        '--skip-tls-verify',
        '-q',
      ],
      {},
    );
    expect([created.code, created.stdout]).toEqual([0, 'tls-c\n']);
    const listed = await runCli(['list', 'clients', '-e', adminUrl, '--skip-tls-verify', '--format', 'json'], {});
    expect(JSON.parse(listed.stdout).items.map((c: { client_id: string }) => c.client_id)).toContain('tls-c');
    const keys = await runCli(['create', 'jwks', 'tls-set', '--alg', 'ES256', '-e', adminUrl, '--skip-tls-verify'], {});
    expect(keys.code).toBe(0);
    const imported = await runCli(
      ['import', 'client', '-e', adminUrl, '--skip-tls-verify', '-q'],
      {},
      30_000,
      JSON.stringify({ client_id: 'tls-i', grant_types: ['client_credentials'] }),
    );
    expect([imported.code, imported.stdout]).toEqual([0, 'tls-i\n']);
    const revoked = await runCli(['delete', 'access-tokens', 'tls-c', '-e', adminUrl, '--skip-tls-verify'], {});
    expect(revoked.code).toBe(0);
  });
});

describe('serve accepts Hydra’s --sqa-opt-out', () => {
  it('parses it as a no-op (the command then fails only on what it should: here a bad DSN)', {
    timeout: 120_000,
  }, async () => {
    const r = await runCli(['serve', 'all', '--sqa-opt-out', '--dev'], { DSN: 'nope', SECRETS_SYSTEM: TEST_SECRET });
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/unknown option/);
    expect(r.stderr.trim()).toBe('dsn: expected postgres://…, postgresql://…, cockroach://… or memory');
  });
});
