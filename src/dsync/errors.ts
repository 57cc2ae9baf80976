/**
 * Errors of directory sync, one constructor per wire family. Every call makes a new instance.
 * - SCIM (identity providers): RFC 7644 §3.12 body, `status` as a string, `scimType` when one applies.
 * - dsync (v1 API and the library controller): Jackson's `{error: {message}}` / `{message, code}`.
 */
import { isDataException } from '../core/db/errors.ts';
import { AppError, isAppError } from '../core/errors.ts';

export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

/** `code: 'scim'` renders without a `scimType` (401, 404 and the like have none). */
export const scimError = (status: number, detail: string, scimType?: ScimType) =>
  new AppError({ status, code: scimType ?? 'scim', description: detail, family: 'scim' });

/** An error of a Jackson envelope operation: the v1 API renders `{error: {message, code}}`. */
export const dsyncError = (status: number, message: string) =>
  new AppError({ status, code: 'jackson', description: message, family: 'dsync' });

/** An error of the v1 HTTP layer itself (gateway, parameters): `{error: {message}}`. */
export const dsyncMessage = (status: number, message: string, headers?: Record<string, string>) =>
  new AppError({ status, code: 'dsync', description: message, family: 'dsync', ...(headers ? { headers } : {}) });

/** Jackson's `apiError`: `{message, code}`. Unexpected errors never leak their text. */
export function jacksonError(e: unknown): { message: string; code: number } {
  if (isAppError(e)) return { message: e.description || e.code, code: e.status };
  if (isDataException(e)) return { message: 'Invalid input.', code: 400 };
  return { message: 'Internal Server Error', code: 500 };
}
