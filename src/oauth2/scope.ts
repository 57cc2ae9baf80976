/**
 * Scope and audience matching (fosite's strategies). Shared by the authorization endpoint, consent
 * skipping and the other grants.
 */
export type ScopeStrategy = (granted: readonly string[], needle: string) => boolean;

export const exactScopeStrategy: ScopeStrategy = (granted, needle) => granted.includes(needle);

/**
 * `foo.*` matches `foo.bar` and `foo.bar.baz` but not `foo`; a pattern never has more dot-segments
 * than the scope it matches; a pattern shorter than the scope must end in `*`.
 */
export const wildcardScopeStrategy: ScopeStrategy = (matchers, needle) => {
  const needleParts = needle.split('.');
  for (const matcher of matchers) {
    const parts = matcher.split('.');
    if (parts.length > needleParts.length) continue;
    let equal = true;
    for (let k = 0; k < parts.length; k++) {
      const c = parts[k] as string;
      if (k === parts.length - 1 && parts.length !== needleParts.length && c !== '*') {
        equal = false;
        break;
      }
      if (c === '*' && (needleParts[k] as string).length > 0) continue;
      if (c !== needleParts[k]) {
        equal = false;
        break;
      }
    }
    if (equal) return true;
  }
  return false;
};

export const scopeStrategy = (name: string): ScopeStrategy =>
  name === 'exact' ? exactScopeStrategy : wildcardScopeStrategy;

/** Every requested scope is covered by `granted` under the strategy. */
export const coversScopes = (strategy: ScopeStrategy, granted: readonly string[], requested: readonly string[]) =>
  requested.every((s) => strategy(granted, s));

/** Splits a space separated parameter, dropping empty values. */
export const splitSpaces = (v: string | undefined): string[] => (v ? v.split(' ').filter(Boolean) : []);

interface LooseUrl {
  scheme: string;
  host: string;
  path: string;
}

function parseLoose(s: string): LooseUrl {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^?#]*)/.exec(s);
  if (m) return { scheme: (m[1] as string).toLowerCase(), host: m[2] as string, path: m[3] as string };
  return { scheme: '', host: '', path: s.replace(/[?#].*$/, '') };
}

/**
 * fosite's audience matching: each requested value needs an allowed entry with the same scheme and
 * host whose path equals it or is a parent path of it. Returns the first value not allowed.
 */
export function firstDisallowedAudience(allowed: readonly string[], requested: readonly string[]): string | undefined {
  for (const n of requested) {
    const nu = parseLoose(n);
    const ok = allowed.some((h) => {
      const hu = parseLoose(h);
      const base = hu.path.replace(/\/+$/, '');
      if (nu.scheme !== hu.scheme || nu.host !== hu.host) return false;
      if (nu.path === hu.path || nu.path === base) return true;
      return nu.path.length > base.length && nu.path.startsWith(`${base}/`);
    });
    if (!ok) return n;
  }
  return undefined;
}
