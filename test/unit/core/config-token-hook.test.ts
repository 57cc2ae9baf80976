/** `oauth2.token_hook`: a URL, Hydra's `{url, auth}` object (file, or JSON in the environment), or off. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, redactedConfig } from '../../../src/config.ts';
import { problems } from '../../helpers/config.ts';

const AUTH = { type: 'api_key', config: { in: 'header', name: 'X-Key', value: 'k-123' } };

describe('oauth2.token_hook', () => {
  it('is off by default and when empty', () => {
    expect(loadConfig({ env: {} }).oauth2.token_hook).toBeUndefined();
    expect(loadConfig({ env: { OAUTH2_TOKEN_HOOK: '' } }).oauth2.token_hook).toBeUndefined();
  });

  it('takes a URL from the environment', () => {
    expect(loadConfig({ env: { OAUTH2_TOKEN_HOOK: 'https://hooks.example.com/t' } }).oauth2.token_hook).toEqual({
      url: 'https://hooks.example.com/t',
    });
  });

  it('takes the object form as JSON from the environment and from a file', () => {
    const env = { OAUTH2_TOKEN_HOOK: JSON.stringify({ url: 'https://h.example/t', auth: AUTH }) };
    expect(loadConfig({ env }).oauth2.token_hook).toEqual({ url: 'https://h.example/t', auth: AUTH });
    const file = join(mkdtempSync(join(tmpdir(), 'gh-hook-')), 'c.yaml');
    writeFileSync(
      file,
      'oauth2:\n  token_hook:\n    url: https://h.example/f\n    auth:\n      type: api_key\n      config:\n        in: cookie\n        name: hk\n        value: v\n',
    );
    expect(loadConfig({ env: {}, file }).oauth2.token_hook).toEqual({
      url: 'https://h.example/f',
      auth: { type: 'api_key', config: { in: 'cookie', name: 'hk', value: 'v' } },
    });
  });

  it('names the key for a bad URL, bad JSON or an unknown auth type', () => {
    for (const v of ['not a url', '{"url":', JSON.stringify({ url: 'https://h.example', auth: { type: 'basic' } })]) {
      const p = problems(() => loadConfig({ env: { OAUTH2_TOKEN_HOOK: v } }));
      expect(p.length).toBeGreaterThan(0);
      expect(p.every((x) => x.startsWith('oauth2.token_hook'))).toBe(true);
    }
  });

  it('is redacted in the printable view (the api key lives in it)', () => {
    const c = loadConfig({ env: { OAUTH2_TOKEN_HOOK: JSON.stringify({ url: 'https://h.example/t', auth: AUTH }) } });
    expect(JSON.stringify(redactedConfig(c))).not.toContain('k-123');
  });
});
