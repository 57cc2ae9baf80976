/**
 * Which URI schemes a client may register, by what the URI is used for. Hydra stores any parseable
 * redirect URI and only checks `http` at authorization time (fosite's secure-redirect rule), so a
 * `javascript:` or `data:` URI could reach the `form_post` page, the front-channel logout page or
 * the post-logout redirect. Here the scheme is an allow-list, checked on every write (create, PUT,
 * PATCH, dynamic registration) and again where a stored URI is used, so rows written before the
 * rule existed are never rendered:
 *
 * - `redirect` (redirect_uris, post_logout_redirect_uris): `https`; `http` only for a loopback or
 *   `localhost` host (RFC 8252 §7.3, §8.3) unless `dev` is on; or a private-use scheme of a native
 *   app, which must be a reverse domain name such as `com.example.app` (RFC 8252 §7.1: "a URI
 *   scheme based on a domain name under their control, expressed in reverse order").
 * - `web` (frontchannel_logout_uri, loaded in an iframe): `https`, `http` as above.
 * - `fetch` (jwks_uri, backchannel_logout_uri, request_uris): `https` or `http` (the server fetches
 *   them; nothing renders them).
 */

export type UriUse = 'redirect' | 'web' | 'fetch';

/** Schemes that run script, read local files or embed content: refused even when they look private-use. */
const NEVER = new Set(['javascript', 'data', 'vbscript', 'file', 'blob', 'about', 'filesystem', 'view-source']);

/** RFC 8252 §7.1 reverse domain name: at least two labels, letters first, no empty label. */
const PRIVATE_USE = /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/;

const isLoopbackHost = (h: string) =>
  h === 'localhost' || h.endsWith('.localhost') || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);

/** The scheme of a URI (lower-cased), or undefined when it has none. */
export function uriScheme(raw: string): string | undefined {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(raw);
  return m ? (m[1] as string).toLowerCase() : undefined;
}

/**
 * Why `raw` may not be used as `use`, or undefined when it may. `dev` admits `http` for any host
 * (Hydra's `dev` mode).
 */
export function uriRefusal(raw: string, use: UriUse, dev: boolean): string | undefined {
  const scheme = uriScheme(raw);
  if (!scheme || !URL.canParse(raw)) return 'it is not an absolute URI';
  if (NEVER.has(scheme)) return `the scheme '${scheme}' is not allowed`;
  if (scheme === 'https') return undefined;
  if (scheme === 'http') {
    if (use === 'fetch' || dev) return undefined;
    return isLoopbackHost(new URL(raw).hostname)
      ? undefined
      : "http is only allowed for loopback hosts and hosts with suffix 'localhost' (or in dev mode)";
  }
  if (use === 'redirect' && PRIVATE_USE.test(scheme)) return undefined;
  return use === 'redirect'
    ? `the scheme '${scheme}' is not allowed: use https, or a private-use scheme in reverse domain name notation (RFC 8252 §7.1) such as com.example.app`
    : `the scheme '${scheme}' is not allowed: use https`;
}

export const isUsableUri = (raw: string, use: UriUse, dev: boolean) => uriRefusal(raw, use, dev) === undefined;
