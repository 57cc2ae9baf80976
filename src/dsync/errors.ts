/**
 * Errors of directory sync, one constructor per wire family. Every call makes a new instance.
 * - SCIM (identity providers): RFC 7644 §3.12 body, `status` as a string, `scimType` when one applies.
 * - dsync (v1 API and the library controller): Jackson's `{error: {message}}` / `{message, code}`.
 */
import { isDataException } from '../core/db/errors.ts';
import { AppError, isAppError } from '../core/errors.ts';
import type { ErrorRenderer } from '../core/http/errors.ts';

export const SCIM_ERROR_URN = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The error family names this domain registers (see ERROR_RENDERERS). */
export const SCIM_FAMILY = 'scim';
export const DSYNC_FAMILY = 'dsync';
/** The code of an error of a Jackson envelope operation: rendered with its `code` (the status). */
const ENVELOPE = 'jackson';

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
  new AppError({ status, code: scimType ?? 'scim', description: detail, family: SCIM_FAMILY });

/** An error of a Jackson envelope operation: the v1 API renders `{error: {message, code}}`. */
export const dsyncError = (status: number, message: string) =>
  new AppError({ status, code: ENVELOPE, description: message, family: DSYNC_FAMILY });

/** An error of the v1 HTTP layer itself (gateway, parameters): `{error: {message}}`. */
export const dsyncMessage = (status: number, message: string, headers?: Record<string, string>) =>
  new AppError({ status, code: 'dsync', description: message, family: DSYNC_FAMILY, ...(headers ? { headers } : {}) });

/** RFC 7644 §3.12 error body; `scimType` only when the error's code is one (no spaces, not `scim`). */
export function scimErrorBody(e: AppError): Record<string, unknown> {
  return {
    schemas: [SCIM_ERROR_URN],
    detail: e.description || e.code,
    status: String(e.status),
    ...(e.code && e.code !== 'scim' && !e.code.includes(' ') ? { scimType: e.code } : {}),
  };
}

/**
 * How this domain's errors render over HTTP, registered with the apps by family name.
 * - SCIM: RFC 7644 bodies as `application/scim+json`; an unparsable body is `invalidSyntax`, an
 *   unstorable value `invalidValue` (§3.12); errors without a SCIM type carry only `detail`.
 * - dsync: Jackson's `{error: {message}}`; envelope errors also carry their `code`.
 */
export const ERROR_RENDERERS: Record<string, ErrorRenderer> = {
  [SCIM_FAMILY]: {
    render: (e) => ({ type: 'application/scim+json', body: scimErrorBody(e) }),
    plain: (status, description, headers) =>
      new AppError({ status, code: 'scim', description, family: SCIM_FAMILY, ...(headers ? { headers } : {}) }),
    invalidSyntax: (description) => new AppError({ status: 400, code: 'invalidSyntax', description }),
    invalidValue: () => new AppError({ status: 400, code: 'invalidValue', description: 'Invalid input.' }),
  },
  [DSYNC_FAMILY]: {
    render: (e) => ({
      type: 'application/json',
      body: { error: { message: e.description || e.code, ...(e.code === ENVELOPE ? { code: e.status } : {}) } },
    }),
    plain: (status, description, headers) =>
      new AppError({ status, code: 'error', description, family: DSYNC_FAMILY, ...(headers ? { headers } : {}) }),
    invalidValue: () => new AppError({ status: 400, code: 'error', description: 'Invalid input.' }),
  },
};

/** Jackson's `apiError`: `{message, code}`. Unexpected errors never leak their text. */
export function jacksonError(e: unknown): { message: string; code: number } {
  if (isAppError(e)) return { message: e.description || e.code, code: e.status };
  if (isDataException(e)) return { message: 'Invalid input.', code: 400 };
  return { message: 'Internal Server Error', code: 500 };
}
