import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configLeaves, loadConfig, redactedConfig } from '../../../src/config.ts';
import { formatDuration, parseDuration } from '../../../src/core/config/duration.ts';
import { problems } from '../../helpers/config.ts';

const SECRET = 'a-long-enough-system-secret';

describe('configuration', () => {
  it('applies Hydra defaults and derives URLs from the issuer', () => {
    const c = loadConfig({ env: {} });
    expect(c.dsn).toBe('memory');
    expect(c.serve.public.port).toBe(4444);
    expect(c.serve.admin.port).toBe(4445);
    expect(c.ttl.access_token).toBe(3_600_000);
    expect(c.ttl.refresh_token).toBe(720 * 3_600_000);
    expect(c.strategies.access_token).toBe('opaque');
    expect(c.oauth2.preserve_ext_claims).toBe(false);
    expect(c.oauth2.mirror_top_level_claims).toBe(true);
    expect(c.urls.self.issuer).toBe('http://localhost:4444/');
    // dsn: memory turns the development login app on (see config-dev-ui.test.ts); the fallbacks otherwise.
    expect(c.urls.login).toBe('http://localhost:4444/dev/login');
    expect(loadConfig({ env: { DEV_UI_ENABLED: 'false' } }).urls.login).toBe(
      'http://localhost:4444/oauth2/fallbacks/login',
    );
    expect(c.urls.post_logout_redirect).toBe('http://localhost:4444/oauth2/fallbacks/logout/callback');
  });

  it('reads Hydra-style environment variables with the right types', () => {
    const c = loadConfig({
      env: {
        DSN: 'postgres://u@h/db',
        SECRETS_SYSTEM: `${SECRET},${SECRET}-old`,
        URLS_SELF_ISSUER: 'https://auth.example.com',
        SERVE_PUBLIC_PORT: '9000',
        STRATEGIES_JWT_STATELESS_ENABLED: 'true',
        STRATEGIES_JWT_STATELESS_CLAIM_NAME: 'st',
        DB_JWK_CACHE_TTL: '30s',
        OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_PERIOD: '2h',
        OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_REUSE_COUNT: '3',
        FEATURE_FLAGS_DISCARD_SKIPPED_CONSENTS: '1',
        DSYNC_WEBHOOK_BATCH_SIZE: '25',
        DSYNC_WEBHOOK_BATCH_CRON_INTERVAL: '60',
        JACKSON_API_KEYS: 'k1,k2',
      },
    });
    expect(c.secrets.system).toEqual([SECRET, `${SECRET}-old`]);
    expect(c.urls.self.public).toBe('https://auth.example.com/');
    expect(c.serve.public.port).toBe(9000);
    expect(c.strategies.jwt.stateless).toEqual({ enabled: true, claim_name: 'st' });
    expect(c.db.jwk_cache.ttl).toBe(30_000);
    expect(c.oauth2.grant.refresh_token.rotation_grace_period).toBe(7_200_000);
    expect(c.feature_flags.discard_skipped_consents).toBe(true);
    expect(c.dsync.webhook_batch_size).toBe(25);
    expect(c.dsync.webhook_batch_cron_interval).toBe(60_000);
    expect(c.dsync.api_keys).toEqual(['k1', 'k2']);
  });

  it('reads a YAML file, with the environment winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-cfg-'));
    const file = join(dir, 'gatehouse.yml');
    writeFileSync(
      file,
      `dsn: postgres://u@h/db\nsecrets:\n  system: [${SECRET}]\nttl:\n  access_token: 30m\nlog:\n  level: debug\n`,
    );
    const c = loadConfig({ file, env: { LOG_LEVEL: 'warn' } });
    expect(c.ttl.access_token).toBe(30 * 60_000);
    expect(c.log.level).toBe('warn');
  });

  it('names the key of a wrong type, an unknown key and a missing required value', () => {
    expect(problems(() => loadConfig({ env: { SERVE_PUBLIC_PORT: 'abc' } }))).toEqual([
      'serve.public.port: expected an integer, got "abc" (from SERVE_PUBLIC_PORT)',
    ]);
    expect(problems(() => loadConfig({ env: { TTL_ACCESS_TOKEN: 'soon' } }))[0]).toMatch(
      /^ttl\.access_token: expected a duration like 1h, 30m or 10s/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'gh-cfg-'));
    const file = join(dir, 'c.yml');
    writeFileSync(file, 'serve:\n  public:\n    prot: 1\n');
    expect(problems(() => loadConfig({ file, env: {} }))).toEqual([
      'serve.public.prot: unknown key (did you mean serve.public.port?)',
    ]);
    expect(problems(() => loadConfig({ env: { DSN: 'postgres://u@h/db' } }))[0]).toMatch(/^secrets\.system: required/);
    expect(problems(() => loadConfig({ env: { SECRETS_SYSTEM: 'short' } }))[0]).toMatch(
      /^secrets\.system\.0: must be at least 16 characters/,
    );
    expect(new ConfigError(['x: y']).message).toBe('config error: x: y');
  });

  it('limits the refresh rotation grace period to 5m, or 180 days with a reuse count', () => {
    expect(problems(() => loadConfig({ env: { OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_PERIOD: '6m' } }))[0]).toMatch(
      /rotation_grace_period: must be at most 5m unless/,
    );
    expect(
      loadConfig({ env: { OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_PERIOD: '5m' } }).oauth2.grant.refresh_token
        .rotation_grace_period,
    ).toBe(300_000);
    const env = { OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_REUSE_COUNT: '2' };
    expect(
      loadConfig({ env: { ...env, OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_PERIOD: '4320h' } }).oauth2.grant
        .refresh_token.rotation_grace_period,
    ).toBe(180 * 86_400_000);
    expect(
      problems(() => loadConfig({ env: { ...env, OAUTH2_GRANT_REFRESH_TOKEN_ROTATION_GRACE_PERIOD: '4321h' } }))[0],
    ).toMatch(/at most 180 days/);
  });

  it('refuses a stateless JWT claim name that is empty or a standard claim', () => {
    for (const name of ['', 'sub', 'scp']) {
      expect(problems(() => loadConfig({ env: { STRATEGIES_JWT_STATELESS_CLAIM_NAME: name } }))[0]).toMatch(
        /^strategies\.jwt\.stateless\.claim_name: must be a non-empty claim name other than iss, sub/,
      );
    }
    expect(loadConfig({ env: { STRATEGIES_JWT_STATELESS_CLAIM_NAME: 'st' } }).strategies.jwt.stateless.claim_name).toBe(
      'st',
    );
  });

  it('parses and formats Go-style durations', () => {
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('10s')).toBe(10_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('-1')).toBe(-1);
    expect(parseDuration('1x')).toBeUndefined();
    expect(parseDuration('h')).toBeUndefined();
    expect(formatDuration(3_600_000)).toBe('1h0m0s');
    expect(formatDuration(90_000)).toBe('1m30s');
  });

  it('redacts secrets in the printable view', () => {
    const c = loadConfig({ env: { DSN: 'postgres://u:pw@h/db', SECRETS_SYSTEM: SECRET } });
    const r = redactedConfig(c) as { dsn: string; secrets: { system: string } };
    expect(r.dsn).toBe('[redacted]');
    expect(JSON.stringify(r)).not.toContain(SECRET);
  });

  it('documents every key in the configuration table of docs/configuration.md', () => {
    const page = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    const missing = configLeaves()
      .map((l) => l.path)
      .filter((p) => !page.includes(`| \`${p}\``));
    expect(missing).toEqual([]);
  });
});
