/**
 * `gatehouse perform client-credentials`, `introspect token`, `revoke token` and
 * `delete access-tokens`, run as real processes against a test server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { type CreatedClient, createClient } from '../../helpers/oauth2.ts';
import { codeTokens, isActive } from '../../helpers/tokens.ts';

let t: TestServer;
let client: CreatedClient;
beforeAll(async () => {
  t = await startTestServer();
  client = await createClient(t, {
    grant_types: ['client_credentials', 'authorization_code', 'refresh_token'],
    scope: 'read write openid offline',
    audience: ['https://api.example.com'],
  });
});
afterAll(() => t?.close());

/** Table output as [[HEADER, value], …] (tab-aligned cells). */
const cells = (out: string) =>
  out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t').filter(Boolean));

const env = () => ({ OAUTH2_CLIENT_ID: client.client_id, OAUTH2_CLIENT_SECRET: client.client_secret ?? '' });

async function performJson(extra: string[] = []) {
  const r = await runCli(['perform', 'client-credentials', '-e', t.publicUrl, '--format', 'json', ...extra], env());
  expect([r.code, r.stderr]).toEqual([0, '']);
  return JSON.parse(r.stdout) as Record<string, string>;
}

describe('token CLI commands', () => {
  it('perform client-credentials prints a token for the requested scopes and audience', async () => {
    const json = await performJson(['--scope', 'read', '--scope', 'write', '--audience', 'https://api.example.com']);
    expect(json).toMatchObject({ token_type: 'bearer', scope: 'read write' });
    expect(json.access_token).toMatch(/^ory_at_/);
    expect(Date.parse(json.expiry ?? '') - Date.now()).toBeGreaterThan(3500_000);
    const table = await runCli(
      ['perform', 'client-credentials', '--client-id', client.client_id, '--client-secret', client.client_secret ?? ''],
      { ORY_SDK_URL: t.publicUrl },
    );
    expect(table.code).toBe(0);
    const rows = cells(table.stdout);
    expect(rows.map((r) => r[0])).toEqual(['ACCESS TOKEN', 'REFRESH TOKEN', 'ID TOKEN', 'EXPIRY']);
    expect(rows.map((r) => r.length)).toEqual([2, 2, 2, 2]);
    expect(rows[0]?.[1]).toMatch(/^ory_at_/);
    expect([rows[1]?.[1], rows[2]?.[1]]).toEqual(['<empty>', '<empty>']);
  });

  it('perform client-credentials fails with one line on a bad secret or missing credentials', async () => {
    const bad = await runCli(['perform', 'client-credentials', '-e', t.publicUrl], {
      OAUTH2_CLIENT_ID: client.client_id,
      OAUTH2_CLIENT_SECRET: 'wrong-secret',
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: 401 invalid_client/);
    const none = await runCli(['perform', 'client-credentials', '-e', t.publicUrl], {});
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('--client-id and --client-secret');
  });

  it('introspect token prints the introspection, and checks scopes', async () => {
    const { access_token } = await performJson(['--scope', 'read']);
    const table = await runCli(['introspect', 'token', access_token as string, '-e', t.adminUrl], {});
    expect(table.code).toBe(0);
    expect(cells(table.stdout)).toEqual([
      ['ACTIVE', 'true'],
      ['SUBJECT', client.client_id],
      ['CLIENT ID', client.client_id],
      ['SCOPE', 'read'],
      ['EXPIRY', expect.stringMatching(/^\d{4}-\d\d-\d\dT/)],
      ['TOKEN USE', 'access_token'],
    ]);
    const json = await runCli(['introspect', 'token', access_token as string, '--format', 'json'], {
      ORY_SDK_URL: t.adminUrl,
    });
    expect(JSON.parse(json.stdout)).toMatchObject({ active: true, client_id: client.client_id, sub: client.client_id });
    const missing = await runCli(
      ['introspect', 'token', access_token as string, '--scope', 'write', '--format', 'json', '-e', t.adminUrl],
      {},
    );
    expect(JSON.parse(missing.stdout)).toEqual({ active: false });
  });

  it('revoke token revokes the grant of an access or refresh token', async () => {
    const tok = await codeTokens(t, client, 'openid offline');
    const r = await runCli(['revoke', 'token', tok.refresh_token as string, '-e', t.publicUrl], env());
    expect([r.code, cells(r.stdout)]).toEqual([0, [['ID', tok.refresh_token]]]);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    const noClient = await runCli(['revoke', 'token', 'x', '-e', t.publicUrl], {});
    expect(noClient.code).toBe(1);
  });

  it('delete access-tokens deletes the access tokens of a client', async () => {
    const tok = await codeTokens(t, client, 'openid offline');
    const r = await runCli(['delete', 'access-tokens', client.client_id, '-e', t.adminUrl, '--format', 'quiet'], {});
    expect([r.code, r.stdout]).toEqual([0, `${client.client_id}\n`]);
    expect(await isActive(t, tok.access_token as string)).toBe(false);
    expect(await isActive(t, tok.refresh_token as string)).toBe(true);
  });

  it('the grace period limits stop the CLI with one config error line', async () => {
    const r = await runCli(['migrate', 'status'], {
      DSN: t.database.url,
      SECRETS_SYSTEM: 'cli-test-secret-0123456789',
      OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_PERIOD: '10m',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^config error: oauth2\.grant\.refresh_token\.rotation_grace_period: must be at most 5m/);
  });
});
