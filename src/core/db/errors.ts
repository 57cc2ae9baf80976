/** Maps PostgreSQL errors to application errors once, for stores. */
import { type AppError, conflict } from '../errors.ts';

export const pgCode = (e: unknown): string | undefined =>
  typeof e === 'object' && e !== null ? ((e as { code?: string }).code ?? undefined) : undefined;

/** SQLSTATE class 22 (data exception): a value the database cannot take (NUL byte, bad uuid, out of range). */
export const isDataException = (e: unknown) => (pgCode(e) ?? '').startsWith('22');

export const isUniqueViolation = (e: unknown) => pgCode(e) === '23505';

export const isForeignKeyViolation = (e: unknown) => pgCode(e) === '23503';

/** Unique violation → 409; anything else passes through unchanged. */
export function mapDbError(e: unknown, onConflict: () => AppError = () => conflict()): unknown {
  if (isUniqueViolation(e)) return onConflict();
  return e;
}

/** Socket errors of a connection to PostgreSQL that is refused, reset or unreachable. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** Errors node-postgres raises without a code when a connection ends or cannot be had in time. */
const NETWORK_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Connection ended unexpectedly)/;

/**
 * True when an error means PostgreSQL cannot be reached right now: a refused/reset/unreachable
 * socket, a connection that ended, SQLSTATE class 08 (connection exception), 57P01–57P03 (the
 * server is shutting down or starting) or 53300 (too many connections). Follows `cause` and
 * `AggregateError` (a host name with several addresses fails with one error per address).
 */
export function isDatabaseUnavailable(e: unknown, depth = 0): boolean {
  if (typeof e !== 'object' || e === null || depth > 5) return false;
  const code = pgCode(e);
  if (code && (NETWORK_CODES.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code) || code === '53300'))
    return true;
  const message = (e as { message?: unknown }).message;
  if (typeof message === 'string' && NETWORK_MESSAGES.test(message)) return true;
  if (e instanceof AggregateError && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable((e as { cause?: unknown }).cause, depth + 1);
}
