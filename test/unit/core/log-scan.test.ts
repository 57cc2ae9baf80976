import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scanForSecrets } from '../../setup/log-scan.ts';

describe('the end-of-run log scan', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const token = 'd29365f3a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829304152';
  const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU';

  it('finds a credential wherever a log line holds it whole, and masks it in the report', () => {
    dir = mkdtempSync(join(tmpdir(), 'scan-'));
    writeFileSync(join(dir, 'secrets-1.txt'), `${token}\n${jwt}\n`);
    writeFileSync(
      join(dir, 'log-1-1.jsonl'),
      [
        JSON.stringify({ msg: 'request completed', path: '/api/setup/:token/directory-sync' }),
        JSON.stringify({ msg: 'request completed', path: `/api/setup/${token}/directory-sync` }),
        JSON.stringify({ msg: 'careless', body: `assertion=${jwt}&x=1` }),
        '',
      ].join('\n'),
    );
    const r = scanForSecrets(dir);
    expect(r.lines).toBe(3);
    expect(r.leaks).toHaveLength(2);
    expect(r.leaks.map((l) => l.line).join('\n')).not.toContain(token);
    expect(r.leaks[0]?.line).toContain('<credential d293…>');
  });

  it('finds nothing in clean logs', () => {
    dir = mkdtempSync(join(tmpdir(), 'scan-'));
    writeFileSync(join(dir, 'secrets-1.txt'), `${token}\n`);
    writeFileSync(join(dir, 'log-1-1.jsonl'), `${JSON.stringify({ path: '/api/setup/:token' })}\n`);
    expect(scanForSecrets(dir)).toEqual({ lines: 1, secrets: 1, leaks: [] });
  });
});
