/**
 * The outermost error middleware: renders every error in its family's wire shape and never leaks a
 * stack, a secret or an address. Errors are values created per request (never a shared object), so the
 * body is always built from the one error this request threw.
 *
 * The core knows one shape, the default `{error, error_description}`. A domain with other shapes
 * registers an `ErrorRenderer` per family name and the path prefixes of that family (see
 * `ErrorFamilies`); the apps set the request's family by prefix before the body is parsed, and
 * everything here renders through the registry.
 */
import type { Context, Next } from 'koa';
import { isDatabaseUnavailable, isDataException } from '../db/errors.ts';
import { AppError, type ErrorFamily, HERODOT } from '../errors.ts';

export interface ErrorRenderOptions {
  exposeDebug: boolean;
}

/** How a family renders its errors. Every member is optional: what is missing is the default's. */
export interface ErrorRenderer {
  /** Content type and body of `e` (the status is `e.status`); a family with its own body also answers unmatched paths under its prefixes. */
  render?(e: AppError, opts: ErrorRenderOptions): { type: string; body: unknown };
  /** An error of this shape carrying only a status and a text (outage, unexpected failure, too long, too many). */
  plain?(status: number, description: string, headers?: Record<string, string>): AppError;
  /** The request body is not parsable. */
  invalidSyntax?(description: string): AppError;
  /** A value PostgreSQL refuses (a NUL byte, an invalid byte sequence, a number out of range). */
  invalidValue?(): AppError;
}

export interface ErrorFamilyRoute {
  prefix: string;
  family: ErrorFamily;
}

/** What a domain registers: its renderers by family, and the path prefixes of each family per listener. */
export interface ErrorFamilies {
  public: ReadonlyArray<ErrorFamilyRoute>;
  admin: ReadonlyArray<ErrorFamilyRoute>;
  renderers: Readonly<Record<ErrorFamily, ErrorRenderer>>;
}

/** The family of this request (set by path prefix) and the registry, kept on `ctx.state` by the apps. */
const familyOf = (ctx: Context): ErrorFamily | undefined => ctx.state.errorFamily as ErrorFamily | undefined;
function rendererOf(ctx: Context, family: ErrorFamily | undefined): ErrorRenderer | undefined {
  const registry = ctx.state.errorRenderers as Readonly<Record<ErrorFamily, ErrorRenderer>> | undefined;
  return family === undefined || !registry || !Object.hasOwn(registry, family) ? undefined : registry[family];
}

/** Hydra flattens hint (and debug, when exposed) into error_description; `"` becomes `'`. */
export function hydraBody(e: AppError, exposeDebug: boolean): { error: string; error_description: string } {
  let d = e.description;
  if (e.hint) d = d ? `${d} ${e.hint}` : e.hint;
  if (exposeDebug && e.debug) d = d ? `${d} ${e.debug}` : e.debug;
  return { error: e.code, error_description: d.replaceAll('"', "'") };
}

/** Renders `e` in its family's shape: the error's own family, else the request's, else the default. */
export function renderError(ctx: Context, e: AppError, opts: ErrorRenderOptions): void {
  const shaped = rendererOf(ctx, e.family ?? familyOf(ctx))?.render?.(e, opts);
  ctx.status = e.status;
  for (const [k, v] of Object.entries(e.headers ?? {})) ctx.set(k, v);
  ctx.type = shaped?.type ?? 'application/json';
  ctx.body = shaped ? shaped.body : hydraBody(e, opts.exposeDebug);
}

/** An error with only a status and a text, in the request's family's shape when it has one. */
export function plainError(
  ctx: Context,
  status: number,
  description: string,
  fallback: () => AppError,
  headers?: Record<string, string>,
): AppError {
  return rendererOf(ctx, familyOf(ctx))?.plain?.(status, description, headers) ?? fallback();
}

/** Body-parser failures (co-body / raw-body) carry `status` and `type` but no `expose`. */
function fromBodyParser(err: { status?: number; type?: string; name?: string }, ctx: Context): AppError | undefined {
  if (err.type === 'entity.too.large')
    return new AppError({ status: 413, code: HERODOT.badRequest, description: 'The request body is too large.' });
  if (err.type === 'entity.parse.failed' || (err.name === 'SyntaxError' && err.status === 400)) {
    const description = 'The request body is not valid JSON.';
    return (
      rendererOf(ctx, familyOf(ctx))?.invalidSyntax?.(description) ??
      new AppError({ status: 400, code: HERODOT.badRequest, description })
    );
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
 * family's shape. The default is RFC 6749 §4.1.2.1 `temporarily_unavailable` (fosite's description,
 * our text as the hint); a family with a plain shape carries the text itself.
 */
function unavailableError(ctx: Context): AppError {
  const family = familyOf(ctx);
  const headers = { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER) };
  const plain = rendererOf(ctx, family)?.plain?.(503, UNAVAILABLE_TEXT, headers);
  if (plain) return plain;
  return new AppError({
    status: 503,
    code: 'temporarily_unavailable',
    description:
      'The authorization server is currently unable to handle the request due to a temporary overloading or maintenance of the server.',
    hint: UNAVAILABLE_TEXT,
    headers,
  });
}

/**
 * A value PostgreSQL refuses (SQLSTATE class 22: a NUL byte, an invalid byte sequence, a number out
 * of range) came from the caller: 400 in the family's shape, never a 500.
 */
function fromDataException(err: unknown, ctx: Context): AppError | undefined {
  if (!isDataException(err)) return undefined;
  const own = rendererOf(ctx, familyOf(ctx))?.invalidValue?.();
  if (own) return own;
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

export function errorMiddleware(opts: ErrorRenderOptions & { renderers?: ErrorFamilies['renderers'] }) {
  const { renderers = {}, ...renderOpts } = opts;
  return async function errors(ctx: Context, next: Next): Promise<void> {
    ctx.state.errorRenderers = renderers;
    try {
      await next();
      if (ctx.body == null && ctx.status >= 400) {
        const status = ctx.status;
        // A family with its own body answers unmatched paths under its prefixes; elsewhere the generic body.
        if (
          status === 404 &&
          !(ctx as { _matchedRoute?: unknown })._matchedRoute &&
          !rendererOf(ctx, familyOf(ctx))?.render
        ) {
          ctx.body = ROUTE_NOT_FOUND;
        } else {
          const text = status === 405 ? 'Method Not Allowed' : status === 404 ? HERODOT.notFound : 'error';
          renderError(ctx, new AppError({ status, code: text, description: '' }), renderOpts);
        }
        ctx.status = status;
      }
    } catch (err) {
      // A database outage is never the caller's fault nor an internal error: 503, whatever wrapped it.
      if (isDatabaseUnavailable(err)) {
        ctx.state.log?.warn({ code: (err as { code?: string }).code }, 'database unavailable');
        renderError(ctx, unavailableError(ctx), renderOpts);
        return;
      }
      const e = err instanceof AppError ? err : (fromBodyParser(err as never, ctx) ?? fromDataException(err, ctx));
      if (e) {
        if (e.status >= 500) ctx.state.log?.error({ err: e }, 'request failed');
        renderError(ctx, e, renderOpts);
        return;
      }
      ctx.state.log?.error({ err }, 'unhandled error');
      const generic = () =>
        new AppError({ status: 500, code: HERODOT.internal, description: 'The error is unrecognizable' });
      renderError(ctx, plainError(ctx, 500, 'Internal server error', generic), renderOpts);
    }
  };
}
