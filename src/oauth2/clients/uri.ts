/**
 * URL parsing with the semantics of Go's `net/url` that Hydra's client validator relies on
 * (`url.ParseRequestURI` for redirect and metadata URIs, `url.Parse` for CORS origins). The WHATWG
 * `URL` parser is more forgiving (`http:foo` becomes `http://foo/`), so the two would disagree on
 * what Hydra accepts or refuses.
 */

export interface GoUrl {
  /** Lower-cased scheme ('' when absent). */
  scheme: string;
  /** Set for rootless URIs such as `mailto:x` or `javascript:alert(1)`. */
  opaque: string;
  /** True when the URI has an authority part (`//…`). */
  hasAuthority: boolean;
  userinfo: string;
  /** Host as written, with a port and IPv6 brackets. */
  host: string;
  /** Host without port and brackets (Go's `Hostname()`). */
  hostname: string;
  /** Port digits or '' (Go's `Port()`). */
  port: string;
  path: string;
  query: string;
  fragment: string;
}

// Go refuses ASCII control bytes anywhere in a URL.
const CTL = /[\x00-\x1f\x7f]/;
const HOST_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=%:[\]]*$/;

function getScheme(raw: string): { scheme: string; rest: string } | undefined {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (/[A-Za-z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return { scheme: '', rest: raw };
      continue;
    }
    if (c === ':') {
      if (i === 0) return undefined; // "missing protocol scheme"
      return { scheme: raw.slice(0, i).toLowerCase(), rest: raw.slice(i + 1) };
    }
    return { scheme: '', rest: raw };
  }
  return { scheme: '', rest: raw };
}

function splitHost(authority: string): Pick<GoUrl, 'userinfo' | 'host' | 'hostname' | 'port'> | undefined {
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at) : '';
  const host = at >= 0 ? authority.slice(at + 1) : authority;
  if (!HOST_CHARS.test(host)) return undefined;
  let hostname = host;
  let port = '';
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) return undefined;
    hostname = host.slice(1, end);
    const after = host.slice(end + 1);
    if (after && !/^:\d*$/.test(after)) return undefined;
    port = after.slice(1);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0) {
      port = host.slice(colon + 1);
      hostname = host.slice(0, colon);
      if (!/^\d*$/.test(port)) return undefined;
      if (hostname.includes(':')) return undefined;
    }
  }
  return { userinfo, host, hostname, port };
}

function parse(raw: string, viaRequest: boolean): GoUrl | undefined {
  if (CTL.test(raw)) return undefined;
  if (raw === '' && viaRequest) return undefined;
  let fragment = '';
  if (!viaRequest) {
    const hash = raw.indexOf('#');
    if (hash >= 0) {
      fragment = raw.slice(hash + 1);
      raw = raw.slice(0, hash);
    }
  }
  const s = getScheme(raw);
  if (!s) return undefined;
  let rest = s.rest;
  let query = '';
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  const base = { scheme: s.scheme, opaque: '', hasAuthority: false, userinfo: '', host: '', hostname: '', port: '' };
  if (!rest.startsWith('/')) {
    if (s.scheme) return { ...base, opaque: rest, path: '', query, fragment };
    if (viaRequest) return undefined; // "invalid URI for request"
    if (rest.split('/')[0]?.includes(':')) return undefined; // "first path segment in URL cannot contain colon"
    return { ...base, path: rest, query, fragment };
  }
  if ((s.scheme || (!viaRequest && !rest.startsWith('///'))) && rest.startsWith('//')) {
    let authority = rest.slice(2);
    let path = '';
    const slash = authority.indexOf('/');
    if (slash >= 0) {
      path = authority.slice(slash);
      authority = authority.slice(0, slash);
    }
    const h = splitHost(authority);
    if (!h) return undefined;
    return { ...base, ...h, hasAuthority: true, path, query, fragment };
  }
  return { ...base, path: rest, query, fragment };
}

/** Go's `url.ParseRequestURI`: an absolute URI or an absolute path; no fragment splitting. */
export const parseRequestUri = (raw: string): GoUrl | undefined => parse(raw, true);

/** Go's `url.Parse`: also relative references; the fragment is split off. */
export const parseUrl = (raw: string): GoUrl | undefined => parse(raw, false);
