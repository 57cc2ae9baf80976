import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tabwrite } from '../../../src/cli/printing.ts';
import { freePort, startTestServer, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';
import { call } from '../../helpers/clients.ts';

describe('CLI: Hydra’s client commands against a running server', () => {
  let s: TestServer;
  let env: Record<string, string>;
  beforeAll(async () => {
    s = await startTestServer();
    env = { ORY_SDK_URL: s.adminUrl };
  });
  afterAll(async () => s?.close());

  it('creates a client from Hydra’s flags and prints it as JSON', async () => {
    const r = await runCli(
      [
        'create',
        'oauth2-client',
        '-e',
        s.adminUrl,
        '--id',
        'cli-one',
        '--name',
        'CLI app',
        '--redirect-uri',
        'https://cli.example.com/cb,https://cli.example.com/cb2',
        '--grant-type',
        'authorization_code',
        '--grant-type',
        'refresh_token',
        '--scope',
        'openid,offline_access',
        '--audience',
        'https://api.example.com',
        '--policy-uri',
        'https://cli.example.com/policy',
        '--allowed-cors-origin',
        'https://cli.example.com',
        '--post-logout-callback',
        'https://cli.example.com/bye',
        '--owner',
        'ops',
        '--contact',
        'ops@example.com',
        '--metadata',
        '{"team":"cli"}',
        '--skip-consent',
        '--format',
        'json',
      ],
      {},
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const c = JSON.parse(r.stdout);
    expect(c).toMatchObject({
      client_id: 'cli-one',
      client_name: 'CLI app',
      redirect_uris: ['https://cli.example.com/cb', 'https://cli.example.com/cb2'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid offline_access',
      audience: ['https://api.example.com'],
      policy_uri: 'https://cli.example.com/policy',
      owner: 'ops',
      contacts: ['ops@example.com'],
      metadata: { team: 'cli' },
      skip_consent: true,
      skip_logout_consent: false,
      request_object_signing_alg: 'RS256',
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(c.client_secret).toMatch(/^.{26}$/);
    expect(await s.container.oauth2.clients.authenticateClient('cli-one', c.client_secret)).toBeDefined();
  });

  it('prints a created client as Hydra’s vertical table by default (endpoint from ORY_SDK_URL)', async () => {
    const r = await runCli(
      ['create', 'client', '--id', 'cli-table', '--secret', 'table-secret', '--scope', 'a,b'],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      tabwrite([
        ['CLIENT ID', 'cli-table'],
        ['CLIENT SECRET', 'table-secret'],
        ['GRANT TYPES', 'authorization_code'],
        ['RESPONSE TYPES', 'code'],
        ['SCOPE', 'a b'],
        ['AUDIENCE', ''],
        ['REDIRECT URIS', ''],
      ]),
    );
    expect(r.stdout.split('\n')[0]).toBe('CLIENT ID\tcli-table\t\t');
  });

  it('gets one or several clients, never with a secret', async () => {
    const one = await runCli(['get', 'oauth2-client', 'cli-table', '--format', 'json'], env);
    expect(JSON.parse(one.stdout)).toMatchObject({ client_id: 'cli-table', scope: 'a b' });
    expect(one.stdout).not.toContain('table-secret');
    const two = await runCli(['get', 'oauth2-client', 'cli-one', 'cli-table'], env);
    expect(two.code).toBe(0);
    const lines = two.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^CLIENT ID\t+CLIENT SECRET\t+GRANT TYPES/);
    expect(lines.slice(1).map((l) => l.split('\t')[0])).toEqual(['cli-one', 'cli-table']);
  });

  it('lists clients page by page with the next page token', async () => {
    const first = await runCli(['list', 'oauth2-clients', '--page-size', '1', '--format', 'json'], env);
    const p1 = JSON.parse(first.stdout);
    expect(p1.items).toHaveLength(1);
    expect(p1.is_last_page).toBe(false);
    expect(p1.next_page_token).not.toBe('');
    const second = await runCli(['list', 'clients', '--page-size', '1', '--page-token', p1.next_page_token, '-q'], env);
    expect(second.stdout.trim()).not.toBe(p1.items[0].client_id);
    const table = await runCli(['list', 'oauth2-clients'], env);
    expect(table.stdout).toMatch(/\nIS LAST PAGE\t+true\t\n$/);
  });

  it('updates (replaces) a client', async () => {
    const r = await runCli(['update', 'oauth2-client', 'cli-table', '--name', 'renamed', '--format', 'json'], env);
    expect(r.code).toBe(0);
    // Every other field goes back to its flag default (scope to the server's default scope).
    expect(JSON.parse(r.stdout)).toMatchObject({
      client_id: 'cli-table',
      client_name: 'renamed',
      scope: 'offline_access offline openid',
    });
    const got = await call(s.adminUrl, 'GET', '/admin/clients/cli-table');
    expect(got.body.client_name).toBe('renamed');
  });

  it('creates a client from --file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-cli-'));
    const file = join(dir, 'client.json');
    writeFileSync(
      file,
      JSON.stringify({ client_id: 'from-file', client_name: 'file', token_endpoint_auth_method: 'none' }),
    );
    const r = await runCli(['create', 'oauth2-client', '--file', file, '--format', 'json'], env);
    expect(r.code).toBe(0);
    const c = JSON.parse(r.stdout);
    expect(c).toMatchObject({ client_id: 'from-file', client_name: 'file', token_endpoint_auth_method: 'none' });
    expect(c).not.toHaveProperty('client_secret');
  });

  it('deletes clients and reports each one that failed on its own line, exit 1', async () => {
    const ok = await runCli(['delete', 'oauth2-client', 'cli-one', '--format', 'json'], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toBe('cli-one');
    const mixed = await runCli(['delete', 'client', 'cli-table', 'missing-one'], env);
    expect(mixed.code).toBe(1);
    expect(mixed.stdout).toBe('ID\tcli-table\t\n');
    expect(mixed.stderr).toBe('error: missing-one: 404 Unable to locate the resource\n');
  });

  it('prints one-line errors with exit 1: API refusal, unknown client, no endpoint, unreachable endpoint', async () => {
    const bad = await runCli(['create', 'client', '--logo-uri', 'javascript:alert(1)'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/^error: 400 invalid_client_metadata: .*must use https:\/\/ or http:\/\/.*logo_uri/);
    const missing = await runCli(['get', 'client', 'nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: 404 Unable to locate the resource\n');
    const none = await runCli(['list', 'oauth2-clients'], {});
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('error: set the admin API URL with --endpoint or ORY_SDK_URL\n');
    const port = await freePort();
    const down = await runCli(['list', 'oauth2-clients', '-e', `http://127.0.0.1:${port}`], {});
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`error: cannot reach http://127.0.0.1:${port} (ECONNREFUSED)\n`);
  });
});
