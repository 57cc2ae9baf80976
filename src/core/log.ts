/**
 * Structured logging with pino. Secrets, tokens, cookies and authorization headers are redacted;
 * no log entry carries `audience: "audit"` at any depth (seed behaviour 14: auditing uses events
 * and traces, not a log field); IP addresses are never logged.
 */
import { Writable } from 'node:stream';
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'secret',
  '*.secret',
  'client_secret',
  '*.client_secret',
  'password',
  '*.password',
  'token',
  '*.token',
  'access_token',
  '*.access_token',
  'refresh_token',
  '*.refresh_token',
  'id_token',
  '*.id_token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  'cookie',
  '*.cookie',
  'apiSecret',
  '*.apiSecret',
  'dsn',
  '*.dsn',
];

/** Removes every `audience: "audit"` pair, at any depth, without touching other fields. */
export function stripAuditAudience<T>(value: T, depth = 0): T {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => stripAuditAudience(v, depth + 1)) as T;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === 'audience' && v === 'audit') {
      out ??= { ...(value as Record<string, unknown>) };
      delete out[k];
      continue;
    }
    if (v !== null && typeof v === 'object' && !(v instanceof Error)) {
      const nv = stripAuditAudience(v, depth + 1);
      if (nv !== v) {
        out ??= { ...(value as Record<string, unknown>) };
        out[k] = nv;
      }
    }
  }
  return (out ?? value) as T;
}

const LEVELS: Record<string, string> = { panic: 'fatal' };

/** Minimal `text` format: `LEVEL time msg key=value …` on one line. */
function textStream(out: NodeJS.WritableStream): DestinationStream {
  const names: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
  return new Writable({
    write(chunk, _enc, cb) {
      try {
        const { level, time, msg, pid: _p, hostname: _h, ...rest } = JSON.parse(String(chunk));
        const kv = Object.entries(rest)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`)
          .join(' ');
        out.write(`${names[level] ?? level} ${new Date(time).toISOString()} ${msg ?? ''}${kv ? ` ${kv}` : ''}\n`);
      } catch {
        out.write(chunk);
      }
      cb();
    },
  }) as unknown as DestinationStream;
}

export interface LogOptions {
  level?: string;
  format?: string;
  leakSensitiveValues?: boolean;
  destination?: DestinationStream;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const level = LEVELS[opts.level ?? 'info'] ?? opts.level ?? 'info';
  const dest =
    opts.destination ?? (opts.format === 'text' ? textStream(process.stdout) : pino.destination({ sync: false }));
  return pino(
    {
      level,
      base: { service: 'gatehouse' },
      ...(opts.leakSensitiveValues ? {} : { redact: { paths: REDACT_PATHS, censor: '[redacted]' } }),
      formatters: {
        log: (obj) => stripAuditAudience(obj),
        bindings: (b) => stripAuditAudience({ service: b.service }),
      },
      serializers: { err: pino.stdSerializers.err },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest,
  );
}

/** A silent logger for library use and tests that do not inspect logs. */
export const silentLogger = (): Logger => pino({ level: 'silent' });
