/**
 * Redirects that abort an authorization request. Once the `redirect_uri` is verified, an error in
 * the authorization request goes back to the client as a redirect (RFC 6749 §4.1.2.1, §4.2.2.1)
 * instead of an error page. That is an expected outcome of a bad request, not a server failure, so
 * it is logged at `info` (never at error level), with the error code only: the
 * redirect URL is not logged (it carries `state` and client data).
 *
 * Use this from the authorize handler (and any other flow endpoint that ends a flow at the client)
 * instead of throwing: throwing would render the error here and, for 5xx codes, log at error.
 */
import type { Context } from 'koa';
import { noStore } from './params.ts';

export interface AbortRedirect {
  /** The verified redirect URI of the client. */
  redirectUri: string;
  /** RFC 6749 error code, e.g. `access_denied`, `invalid_scope`, `login_required`. */
  error: string;
  errorDescription?: string;
  /** Hydra/fosite's extra parameters (`error_hint`, `error_debug` when exposed). */
  extra?: Record<string, string>;
  state?: string;
  /** RFC 9207 issuer identifier. */
  iss?: string;
  /** `query` for the code flow, `fragment` for implicit/hybrid responses. */
  responseMode?: 'query' | 'fragment';
}

/** The redirect URL carrying the error parameters in the query or the fragment. */
export function abortRedirectUrl(a: AbortRedirect): string {
  const params = new URLSearchParams({ error: a.error });
  if (a.errorDescription) params.set('error_description', a.errorDescription);
  for (const [k, v] of Object.entries(a.extra ?? {})) params.set(k, v);
  if (a.state !== undefined) params.set('state', a.state);
  if (a.iss !== undefined) params.set('iss', a.iss);
  const u = new URL(a.redirectUri);
  u.hash = ''; // RFC 6749 §3.1.2: the redirection endpoint URI must not include a fragment
  if (a.responseMode === 'fragment') return `${u.toString()}#${params.toString()}`;
  for (const [k, v] of params) u.searchParams.set(k, v);
  return u.toString();
}

/** Ends the request with a 303 redirect to the client carrying the error; logged at info. */
export function abortWithRedirect(ctx: Context, a: AbortRedirect): void {
  noStore(ctx);
  ctx.status = 303; // fosite answers authorization errors with 303 See Other
  ctx.redirect(abortRedirectUrl(a));
  ctx.state.log?.info(
    { event: 'authorization_aborted', error: a.error, responseMode: a.responseMode ?? 'query' },
    'authorization request aborted: the error is redirected to the client',
  );
}
