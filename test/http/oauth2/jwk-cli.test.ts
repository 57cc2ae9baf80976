import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { runCli } from '../../helpers/cli.ts';

describe('gatehouse create/get/delete jwks', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('creates a key with Hydra’s flags and prints JSON with the set', async () => {
    const r = await runCli(['create', 'jwks', 'cli-set', '--alg', 'ES256', '--kid', 'k1', '-e', s.adminUrl], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.set).toBe('cli-set');
    expect(out.keys).toHaveLength(1);
    expect(out.keys[0]).toMatchObject({ set: 'cli-set', kid: 'k1', alg: 'ES256', use: 'sig', kty: 'EC' });
    expect(out.keys[0].d).toBeTruthy();

    // Positional kid and ORY_SDK_URL, as in `hydra create jwk <set> [kid]`; --public hides private parts.
    const r2 = await runCli(['create', 'jwk', 'cli-set', 'k2', '--alg', 'EdDSA', '--public'], {
      ORY_SDK_URL: s.adminUrl,
    });
    expect(r2.code).toBe(0);
    const k2 = JSON.parse(r2.stdout).keys[0];
    expect(k2).toMatchObject({ set: 'cli-set', kid: 'k2', alg: 'EdDSA' });
    expect(k2).not.toHaveProperty('d');
  });

  it('gets one or more sets', async () => {
    const one = await runCli(['get', 'jwks', 'cli-set', '-e', s.adminUrl], {});
    expect(one.code).toBe(0);
    const set = JSON.parse(one.stdout);
    expect(set.set).toBe('cli-set');
    expect(set.keys.map((k: { kid: string }) => k.kid)).toEqual(['k2', 'k1']);

    await runCli(['create', 'jwks', 'cli-other', '--alg', 'ES384', '--kid', 'o1', '-e', s.adminUrl], {});
    const lone = await runCli(['get', 'jwks', 'cli-other', '--public', '-e', s.adminUrl], {});
    expect(JSON.parse(lone.stdout)).toMatchObject({ set: 'cli-other', kid: 'o1', kty: 'EC', crv: 'P-384' });
    expect(JSON.parse(lone.stdout)).not.toHaveProperty('d');

    const both = await runCli(['get', 'jwks', 'cli-set', 'cli-other', '-e', s.adminUrl], {});
    const all = JSON.parse(both.stdout);
    expect(all).not.toHaveProperty('set');
    expect(all.keys.map((k: { set: string; kid: string }) => `${k.set}/${k.kid}`)).toEqual([
      'cli-set/k2',
      'cli-set/k1',
      'cli-other/o1',
    ]);
  });

  it('prints Hydra’s output formats with --format', async () => {
    const table = await runCli(['get', 'jwks', 'cli-set', '-e', s.adminUrl, '--format', 'table'], {});
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SET ID\t+KEY ID\t+ALGORITHM\t+USE\t*$/);
    expect(lines.slice(1).map((l) => l.split(/\t+/).slice(0, 4))).toEqual([
      ['cli-set', 'k2', 'EdDSA', 'sig'],
      ['cli-set', 'k1', 'ES256', 'sig'],
    ]);
    const quiet = await runCli(['get', 'jwks', 'cli-set', '-e', s.adminUrl, '--format', 'quiet'], {});
    expect(quiet.stdout).toBe('k2\nk1\n');
    const json = await runCli(
      ['create', 'jwks', 'cli-fmt', '--alg', 'ES256', '--kid', 'f1', '-e', s.adminUrl, '--format', 'json'],
      {},
    );
    expect(json.stdout.trim().includes('\n')).toBe(false);
    expect(JSON.parse(json.stdout)).toMatchObject({ set: 'cli-fmt', keys: [{ kid: 'f1', alg: 'ES256' }] });
    const bad = await runCli(['get', 'jwks', 'cli-set', '-e', s.adminUrl, '--format', 'yaml'], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/argument 'yaml' is invalid/);
  });

  it('deletes sets', async () => {
    const r = await runCli(['delete', 'jwks', 'cli-set', 'cli-other', '-e', s.adminUrl], {});
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('cli-set\ncli-other\n');
    expect((await fetch(`${s.adminUrl}/admin/keys/cli-set`)).status).toBe(404);
  });

  it('reports expected errors on one line with exit code 1', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        ['get', 'jwks', 'missing', '-e', s.adminUrl],
        {},
        /answered 404: Not Found: Unable to locate the requested resource/,
      ],
      [
        ['create', 'jwks', 'x', '--alg', 'HS256', '-e', s.adminUrl],
        {},
        /answered 400: Bad Request: Unsupported key algorithm/,
      ],
      [['get', 'jwks', 'x'], {}, /no admin endpoint: pass --endpoint or set ORY_SDK_URL/],
      [['get', 'jwks', 'x', '-e', 'not a url'], {}, /is not a URL/],
      [['get', 'jwks', 'x', '-e', 'http://127.0.0.1:1'], {}, /cannot reach the admin API at http:\/\/127\.0\.0\.1:1/],
    ];
    for (const [args, env, message] of cases) {
      const r = await runCli(args, env);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^error: /);
      expect(r.stderr).toMatch(message);
    }
  });
});
