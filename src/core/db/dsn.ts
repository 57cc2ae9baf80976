/** DSN schemes: postgres/postgresql, cockroach, and memory (embedded PostgreSQL). */
export type DsnKind = 'postgres' | 'cockroach' | 'memory';

export interface ParsedDsn {
  kind: DsnKind;
  /** A URL the `pg` driver can connect to (`cockroach://` rewritten to `postgres://`); empty for memory. */
  url: string;
}

export class DsnError extends Error {
  override name = 'DsnError';
}

export function parseDsn(dsn: string): ParsedDsn {
  const s = dsn.trim();
  if (s === 'memory') return { kind: 'memory', url: '' };
  const m = /^([a-z][a-z0-9+.-]*):\/\//i.exec(s);
  if (!m) throw new DsnError('dsn: expected postgres://…, postgresql://…, cockroach://… or memory');
  const scheme = (m[1] as string).toLowerCase();
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new DsnError(`dsn: not a valid ${scheme}:// URL`);
  }
  if (scheme === 'postgres' || scheme === 'postgresql') return { kind: 'postgres', url: s };
  if (scheme === 'cockroach' || scheme === 'cockroachdb' || scheme === 'crdb') {
    url.protocol = 'postgres:';
    return { kind: 'cockroach', url: url.toString() };
  }
  throw new DsnError(`dsn: unsupported scheme ${scheme}://; use postgres://, cockroach:// or memory`);
}

/** The DSN with its password replaced, for messages. */
export function redactDsn(dsn: string): string {
  try {
    const u = new URL(dsn);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return dsn === 'memory' ? dsn : '(unparseable dsn)';
  }
}
