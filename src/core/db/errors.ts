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
