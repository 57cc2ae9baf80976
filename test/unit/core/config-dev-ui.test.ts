/** `dev_ui.*`: the development login app is on only with `dsn: memory`, and refused elsewhere unless `dev: true`. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, redactedConfig } from '../../../src/config.ts';
import { DEFAULT_DEV_USERS } from '../../../src/oauth2/index.ts';
import { problems } from '../../helpers/config.ts';

const PG = { DSN: 'postgres://db.example/gh', SECRETS_SYSTEM: 'a-system-secret-of-some-length' };

describe('dev_ui', () => {
  it('is on by default with dsn: memory, with the default test user and /dev/ pages as the UI URLs', () => {
    const c = loadConfig({ env: {} });
    expect(c.dev_ui.enabled).toBe(true);
    expect(c.dev_ui.users).toEqual(DEFAULT_DEV_USERS);
    expect(c.urls.login).toBe('http://localhost:4444/dev/login');
    expect(c.urls.consent).toBe('http://localhost:4444/dev/consent');
    expect(c.urls.logout).toBe('http://localhost:4444/dev/logout');
    expect(c.urls.registration).toBe('http://localhost:4444/dev/login');
    expect(c.urls.device.verification).toBe('http://localhost:4444/dev/device');
    expect(c.urls.device.success).toBe('http://localhost:4444/dev/device/done');
  });

  it('keeps configured UI URLs', () => {
    const c = loadConfig({
      env: { URLS_LOGIN: 'https://login.example/l', URLS_DEVICE_VERIFICATION: 'https://login.example/device' },
    });
    expect(c.urls.login).toBe('https://login.example/l');
    expect(c.urls.consent).toBe('http://localhost:4444/dev/consent');
    expect(c.urls.device.verification).toBe('https://login.example/device');
    expect(c.urls.device.success).toBe('http://localhost:4444/dev/device/done');
  });

  it('is off by default with any other dsn, even with dev: true, and the fallback pages stay', () => {
    for (const env of [PG, { ...PG, DEV: 'true' }]) {
      const c = loadConfig({ env });
      expect(c.dev_ui.enabled).toBe(false);
      expect(c.urls.login).toBe('http://localhost:4444/oauth2/fallbacks/login');
      expect(c.urls.device.verification).toBe('http://localhost:4444/oauth2/fallbacks/device');
      expect(c.urls.device.success).toBe('http://localhost:4444/oauth2/fallbacks/device/done');
    }
  });

  it('is refused with a non-memory dsn unless dev: true is also set (environment and file)', () => {
    expect(problems(() => loadConfig({ env: { ...PG, DEV_UI_ENABLED: 'true' } }))).toEqual([
      'dev_ui.enabled: the development login app accepts fixed test passwords; it is refused with a dsn other than memory unless dev: true is also set',
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'gh-devui-')), 'c.yaml');
    writeFileSync(file, 'dsn: postgres://db.example/gh\ndev_ui:\n  enabled: true\n');
    expect(problems(() => loadConfig({ env: { SECRETS_SYSTEM: PG.SECRETS_SYSTEM }, file }))[0]).toMatch(
      /^dev_ui\.enabled: .*unless dev: true/,
    );
    const c = loadConfig({ env: { ...PG, DEV_UI_ENABLED: 'true', DEV: 'true' } });
    expect(c.dev_ui.enabled).toBe(true);
    expect(c.urls.login).toBe('http://localhost:4444/dev/login');
  });

  it('can be switched off with dsn: memory', () => {
    const c = loadConfig({ env: { DEV_UI_ENABLED: 'false' } });
    expect(c.dev_ui.enabled).toBe(false);
    expect(c.urls.login).toBe('http://localhost:4444/oauth2/fallbacks/login');
  });

  it('takes users as JSON from the environment, checks their shape, and redacts them', () => {
    const users = [{ subject: 'bob', password: 'pw-bob', claims: { name: 'Bob' } }];
    const c = loadConfig({ env: { DEV_UI_USERS: JSON.stringify(users) } });
    expect(c.dev_ui.users).toEqual(users);
    expect((redactedConfig(c).dev_ui as { users: unknown }).users).toBe('[redacted]');
    expect(problems(() => loadConfig({ env: { DEV_UI_USERS: '[{"subject":"x"}]' } }))[0]).toMatch(/^dev_ui\.users/);
    expect(problems(() => loadConfig({ env: { DEV_UI_USERS: 'not json' } }))[0]).toMatch(
      /^dev_ui\.users: expected a JSON list/,
    );
  });
});
