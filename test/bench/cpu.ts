/**
 * CPU time a side spends, read from Linux's /proc: its own process, and the PostgreSQL backends
 * connected to its database. A busy, shared machine stretches wall time but hardly CPU time per
 * request, so this tells where the work goes when the rates are blurred by other load.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on every Linux architecture Node runs on). */
const TICKS_PER_S = 100;

/** User + system CPU of one process so far, ms (0 when it is gone or /proc is not there). */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which is in parentheses and may hold spaces.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / TICKS_PER_S;
  } catch {
    return 0;
  }
}

export interface CpuMark {
  processMs: number;
  /** Backend pid → its CPU so far, ms. */
  backends: Map<number, number>;
}

/** The CPU of `pid`, and of every backend of the database of `dsn` (none when dsn is empty). */
export async function cpuMark(pid: number, dsn: string): Promise<CpuMark> {
  const backends = new Map<number, number>();
  if (dsn) {
    const c = new pg.Client({ connectionString: dsn });
    await c.connect();
    try {
      const { rows } = await c.query<{ pid: number }>(
        'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      for (const r of rows) backends.set(r.pid, processCpuMs(r.pid));
    } finally {
      await c.end();
    }
  }
  return { processMs: processCpuMs(pid), backends };
}

/**
 * CPU spent between two marks, ms: the process's, and its database's (backends present at both
 * marks, plus those that appeared since; one that exited between the marks is not counted).
 */
export function cpuSpent(before: CpuMark, after: CpuMark): { processMs: number; databaseMs: number } {
  let databaseMs = 0;
  for (const [pid, ms] of after.backends) databaseMs += ms - (before.backends.get(pid) ?? 0);
  return { processMs: after.processMs - before.processMs, databaseMs };
}
