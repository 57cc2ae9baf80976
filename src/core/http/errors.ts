/**
 * The outermost error middleware: renders every error in its family's wire shape and never leaks a
 * stack, a secret or an address. Errors are values created per request (never a shared object), so the
 * body is always built from the one error this request threw.
 */
import type { Context, Next } from 'koa';
import { isDatabaseUnavailable, isDataException } from '../db/errors.ts';
import { AppError, type ErrorFamily, HERODOT } from '../errors.ts';

export const SCIM_ERROR_URN = 'urn:ietf:params:scim:api:messages:2.0:Error';

export interface ErrorRenderOptions {
  exposeDebug: boolean;
}

/** Hydra flattens hint (and debug, when exposed) into error_description; `"` becomes `'`. */
export function hydraBody(e: AppError, exposeDebug: boolean): { error: string; error_description: string } {
  let d = e.description;
  if (e.hint) d = d ? `${d} ${e.hint}` : e.hint;
  if (exposeDebug && e.debug) d = d ? `${d} ${e.debug}` : e.debug;
  return { error: e.code, error_description: d.replaceAll('"', "'") };
}

/** RFC 7644 §3.12 error body; `scimType` only when the error's code is one (no spaces, not `scim`). */
export function scimErrorBody(e: AppError): Record<string, unknown> {
  return {
    schemas: [SCIM_ERROR_URN],
    detail: e.description || e.code,
    status: String(e.status),
    ...(e.code && e.code !== 'scim' && !e.code.includes(' ') ? { scimType: e.code } : {}),
  };
}

export function renderError(ctx: Context, e: AppError, opts: ErrorRenderOptions): void {
  const family: ErrorFamily = e.family ?? (ctx.state.errorFamily as ErrorFamily | undefined) ?? 'hydra';
  ctx.status = e.status;
  for (const [k, v] of Object.entries(e.headers ?? {})) ctx.set(k, v);
  switch (family) {
    case 'scim':
      ctx.type = 'application/scim+json';
      ctx.body = scimErrorBody(e);
      return;
    case 'dsync':
      // Jackson's v1 API: envelope errors (code `jackson`) carry their code, gateway errors do not.
      ctx.type = 'application/json';
      ctx.body = { error: { message: e.description || e.code, ...(e.code === 'jackson' ? { code: e.status } : {}) } };
      return;
    default:
      ctx.type = 'application/json';
      ctx.body = hydraBody(e, opts.exposeDebug);
  }
}

/** Body-parser failures (co-body / raw-body) carry `status` and `type` but no `expose`. */
function fromBodyParser(
  err: { status?: number; type?: string; name?: string },
  family: ErrorFamily | undefined,
): AppError | undefined {
  if (err.type === 'entity.too.large')
    return new AppError({ status: 413, code: HERODOT.badRequest, description: 'The request body is too large.' });
  if (err.type === 'entity.parse.failed' || (err.name === 'SyntaxError' && err.status === 400)) {
    // RFC 7644 §3.12: an unparsable body is `invalidSyntax` for SCIM clients.
    const code = family === 'scim' ? 'invalidSyntax' : HERODOT.badRequest;
    return new AppError({ status: 400, code, description: 'The request body is not valid JSON.' });
  }
  if (err.status === 400 && typeof err.type === 'string') {
    return new AppError({ status: 400, code: HERODOT.badRequest, description: 'The request body could not be read.' });
  }
  if (err.status === 415)
    return new AppError({ status: 415, code: HERODOT.badRequest, description: 'Unsupported content type.' });
  return undefined;
}

/** Seconds a client is asked to wait (`Retry-After`) while the database is unreachable. */
export const UNAVAILABLE_RETRY_AFTER = 5;
export const UNAVAILABLE_TEXT = 'The service is temporarily unavailable, try again later.';

/**
 * The answer while PostgreSQL cannot be reached: 503 with `Retry-After` (RFC 9110 §15.6.4), in the
 * family's shape. OAuth2 and the Hydra admin API use RFC 6749 §4.1.2.1 `temporarily_unavailable`
 * (fosite's description, our text as the hint); SCIM and Jackson's API carry the text itself.
 */
export function unavailableError(family: ErrorFamily | undefined): AppError {
  const headers = { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER) };
  if (family === 'scim' || family === 'dsync')
    return new AppError({
      status: 503,
      code: family === 'scim' ? 'scim' : 'error',
      description: UNAVAILABLE_TEXT,
      family,
      headers,
    });
  return new AppError({
    status: 503,
    code: 'temporarily_unavailable',
    description:
      'The authorization server is currently unable to handle the request due to a temporary overloading or maintenance of the server.',
    hint: UNAVAILABLE_TEXT,
    family: family ?? 'hydra',
    headers,
  });
}

/**
 * A value PostgreSQL refuses (SQLSTATE class 22: a NUL byte, an invalid byte sequence, a number out
 * of range) came from the caller: 400 in the family's shape, never a 500.
 */
function fromDataException(err: unknown, ctx: Context): AppError | undefined {
  if (!isDataException(err)) return undefined;
  const family = ctx.state.errorFamily as ErrorFamily | undefined;
  if (family === 'scim') return new AppError({ status: 400, code: 'invalidValue', description: 'Invalid input.' });
  if (family === 'dsync') return new AppError({ status: 400, code: 'error', description: 'Invalid input.' });
  if (/^\/(oauth2|userinfo)(\/|$)/.test(ctx.path))
    return new AppError({
      status: 400,
      code: 'invalid_request',
      description:
        'The request is missing a required parameter, includes an invalid parameter value, includes a parameter more than once, or is otherwise malformed.',
      hint: 'A parameter contains a value that cannot be stored.',
      family: 'oauth2',
    });
  return new AppError({
    status: 400,
    code: HERODOT.badRequest,
    description: 'A parameter contains a value that cannot be stored.',
  });
}

const ROUTE_NOT_FOUND = {
  error: {
    code: 404,
    status: 'Not Found',
    message: 'Not Found',
    reason: 'The requested route does not exist. Make sure you are using the right path, domain, and port.',
  },
};

export function errorMiddleware(opts: ErrorRenderOptions) {
  return async function errors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.body == null && ctx.status >= 400) {
        const status = ctx.status;
        const family = ctx.state.errorFamily as ErrorFamily | undefined;
        if (status === 404 && !(ctx as { _matchedRoute?: unknown })._matchedRoute && !family) {
          ctx.body = ROUTE_NOT_FOUND;
        } else {
          const text = status === 405 ? 'Method Not Allowed' : status === 404 ? HERODOT.notFound : 'error';
          renderError(ctx, new AppError({ status, code: text, description: '' }), opts);
        }
        ctx.status = status;
      }
    } catch (err) {
      // A database outage is never the caller's fault nor an internal error: 503, whatever wrapped it.
      if (isDatabaseUnavailable(err)) {
        ctx.state.log?.warn({ code: (err as { code?: string }).code }, 'database unavailable');
        renderError(ctx, unavailableError(ctx.state.errorFamily as ErrorFamily | undefined), opts);
        return;
      }
      const e =
        err instanceof AppError
          ? err
          : (fromBodyParser(err as never, ctx.state.errorFamily as ErrorFamily | undefined) ??
            fromDataException(err, ctx));
      if (e) {
        if (e.status >= 500) ctx.state.log?.error({ err: e }, 'request failed');
        renderError(ctx, e, opts);
        return;
      }
      ctx.state.log?.error({ err }, 'unhandled error');
      const family = ctx.state.errorFamily as ErrorFamily | undefined;
      const generic = new AppError({ status: 500, code: HERODOT.internal, description: 'The error is unrecognizable' });
      if (family === 'scim')
        renderError(ctx, new AppError({ status: 500, code: 'scim', description: 'Internal server error' }), opts);
      else if (family === 'dsync')
        renderError(ctx, new AppError({ status: 500, code: 'error', description: 'Internal server error' }), opts);
      else renderError(ctx, generic, opts);
    }
  };
}
