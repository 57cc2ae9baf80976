/**
 * Application errors. Every throw creates a new instance: nothing request-specific is ever
 * written onto a shared error object (error isolation).
 *
 * `family` tells the HTTP error middleware which wire shape to render: the name under which a
 * domain registered an `ErrorRenderer` (core/http/errors.ts). Without one, the family of the
 * request's path prefix applies, else the default `{error, error_description}` (Hydra's flattened
 * herodot/fosite shape).
 */
export type ErrorFamily = string;

export interface AppErrorOptions {
  status: number;
  /** Machine code (`invalid_request`) or Hydra's herodot message (`The requested resource could not be found`). */
  code: string;
  /** Human readable text safe to show the caller. */
  description?: string;
  /** Extra hint appended to the description (Hydra appends hints after a space). */
  hint?: string;
  /** Debug text, only shown when `oauth2.expose_internal_errors` is on. Never secrets. */
  debug?: string;
  family?: ErrorFamily;
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly description: string;
  readonly hint: string | undefined;
  readonly debug: string | undefined;
  readonly family: ErrorFamily | undefined;
  readonly headers: Record<string, string> | undefined;
  /** Only errors created on purpose are exposed; anything else renders as a generic 500. */
  readonly expose = true;

  constructor(opts: AppErrorOptions) {
    super(opts.description ? `${opts.code}: ${opts.description}` : opts.code, { cause: opts.cause });
    this.name = 'AppError';
    this.status = opts.status;
    this.code = opts.code;
    this.description = opts.description ?? '';
    this.hint = opts.hint;
    this.debug = opts.debug;
    this.family = opts.family;
    this.headers = opts.headers;
  }
}

// Hydra's herodot messages (github.com/ory/herodot), used as `error` on the admin API.
export const HERODOT = {
  badRequest: 'The request was malformed or contained invalid parameters',
  unauthorized: 'The request could not be authorized',
  forbidden: 'The requested action was forbidden',
  notFound: 'The requested resource could not be found',
  dbNotFound: 'Unable to locate the resource',
  conflict: 'Unable to insert or update resource because a resource with that value exists already',
  internal: 'error',
} as const;

export const badRequest = (description: string, code: string = HERODOT.badRequest, hint?: string) =>
  new AppError({ status: 400, code, description, ...(hint ? { hint } : {}) });
export const notFound = (description = '', code: string = HERODOT.notFound) =>
  new AppError({ status: 404, code, description });
export const conflict = (description = '') => new AppError({ status: 409, code: HERODOT.conflict, description });
export const forbidden = (description = '', code: string = HERODOT.forbidden) =>
  new AppError({ status: 403, code, description });

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;
