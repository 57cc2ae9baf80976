import { describe, expect, it } from 'vitest';
import { DsnError, parseDsn, redactDsn } from '../../../src/core/db/dsn.ts';

describe('DSN parsing', () => {
  it('accepts postgres, postgresql, cockroach and memory', () => {
    expect(parseDsn('memory')).toEqual({ kind: 'memory', url: '' });
    expect(parseDsn('postgres://u:p@h:5432/db')).toEqual({ kind: 'postgres', url: 'postgres://u:p@h:5432/db' });
    expect(parseDsn('postgresql://u@h/db').kind).toBe('postgres');
    const c = parseDsn('cockroach://root@db:26257/defaultdb?sslmode=disable');
    expect(c.kind).toBe('cockroach');
    expect(c.url).toBe('postgres://root@db:26257/defaultdb?sslmode=disable');
  });

  it('rejects other schemes with a message naming the supported ones', () => {
    expect(() => parseDsn('mysql://u@h/db')).toThrow(DsnError);
    expect(() => parseDsn('mysql://u@h/db')).toThrow(
      /unsupported scheme mysql:\/\/; use postgres:\/\/, cockroach:\/\/ or memory/,
    );
    expect(() => parseDsn('just-a-string')).toThrow(/expected postgres/);
  });

  it('hides the password when printed', () => {
    expect(redactDsn('postgres://u:secret@h/db')).toBe('postgres://u:***@h/db');
  });
});
