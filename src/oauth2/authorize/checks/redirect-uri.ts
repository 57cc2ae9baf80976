/**
 * `redirect_uri` (fosite): exact match with a registered URI, or a loopback `http://127.0.0.1|[::1]`
 * URI matching a registered one on host, path and query with any port (RFC 8252 §7.3). It may be
 * omitted only when the client has exactly one URI and `openid` is not requested. No fragment.
 * The loopback rule keeps the registered scheme: only a registered `http` loopback URI admits other
 * ports. A stored URI whose scheme the client rules refuse (http is left to `checkRedirectSecure`) (a row written before them, see
 * clients/uri-policy.ts) never matches, so no script URL reaches a redirect or the form_post page.
 */
import { isUsableUri } from '../../clients/uri-policy.ts';
import { oauth2Error } from '../../oauth-errors.ts';
import type { FlowClient } from '../../ports.ts';

const isLoopbackHost = (h: string) => h === '127.0.0.1' || h === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(h);

export function isLocalhost(u: URL): boolean {
  const h = u.hostname;
  return h === 'localhost' || h.endsWith('.localhost') || isLoopbackHost(h);
}

function parse(s: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}

const validShape = (u: URL | undefined, raw: string) => !!u && !raw.includes('#') && /^[a-zA-Z][\w+.-]*:/.test(raw);

function matches(raw: string, registered: readonly string[]): string | undefined {
  const requested = parse(raw);
  if (!requested) return undefined;
  for (const r of registered) {
    if (r === raw) return r;
    const reg = parse(r);
    if (
      reg &&
      requested.protocol === 'http:' &&
      reg.protocol === 'http:' &&
      isLoopbackHost(requested.hostname) &&
      reg.hostname === requested.hostname &&
      reg.pathname === requested.pathname &&
      reg.search === requested.search
    ) {
      return raw;
    }
  }
  return undefined;
}

export function resolveRedirectUri(client: FlowClient, raw: string, scope: readonly string[]): string {
  if (!raw && scope.includes('openid')) {
    throw oauth2Error('invalid_request', {
      hint: "The 'redirect_uri' parameter is required when using OpenID Connect 1.0.",
    });
  }
  let found: string | undefined;
  if (!raw && client.redirectUris.length === 1) found = client.redirectUris[0];
  else if (raw) found = matches(raw, client.redirectUris);
  if (found === undefined || !validShape(parse(found), found) || !isUsableUri(found, 'redirect', true)) {
    throw oauth2Error('invalid_request', {
      hint: "The 'redirect_uri' parameter does not match any of the OAuth 2.0 Client's pre-registered redirect urls.",
    });
  }
  return found;
}

/** Outside dev mode, http is allowed only for localhost (fosite's secure-redirect check). */
export function checkRedirectSecure(uri: string, dev: boolean): void {
  const u = parse(uri);
  if (dev || !u || u.protocol !== 'http:' || isLocalhost(u)) return;
  throw oauth2Error('invalid_request', {
    hint: "Redirect URL is using an insecure protocol, http is only allowed for hosts with suffix 'localhost', for example: http://myapp.localhost/.",
  });
}
