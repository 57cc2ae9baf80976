/** `console.*`: the operator console is on when it has operators; in development the test users are its operators. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.ts';

const problems = (f: () => unknown): string[] => {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
};
const PG = { DSN: 'postgres://db.example/gh', SECRETS_SYSTEM: 'a-system-secret-of-some-length' };

describe('console', () => {
  it('with dsn: memory (development login app on) has the test user as its operator and is on', () => {
    const c = loadConfig({ env: {} });
    expect(c.console.operators).toEqual(['ada@example.com']);
    expect(c.console.enabled).toBe(true);
    expect(c.console.session_ttl).toBe(3_600_000);
  });

  it('is off in production without operators, on with them; configured operators win over the test users', () => {
    expect(loadConfig({ env: PG }).console).toMatchObject({ enabled: false, operators: [] });
    const on = loadConfig({ env: { ...PG, CONSOLE_OPERATORS: 'alice@corp.example,bob@corp.example' } });
    expect(on.console).toMatchObject({ enabled: true, operators: ['alice@corp.example', 'bob@corp.example'] });
    const dev = loadConfig({ env: { CONSOLE_OPERATORS: 'alice@corp.example' } });
    expect(dev.console.operators).toEqual(['alice@corp.example']);
    expect(loadConfig({ env: { ...PG, CONSOLE_OPERATORS: 'a', CONSOLE_ENABLED: 'false' } }).console.enabled).toBe(
      false,
    );
  });

  it('refuses console.enabled: true without any operator', () => {
    expect(problems(() => loadConfig({ env: { ...PG, CONSOLE_ENABLED: 'true' } }))).toContain(
      'console.enabled: the operator console needs at least one subject in console.operators',
    );
  });
});
