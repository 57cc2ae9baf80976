/** Request parameters as the handlers of every domain read them. */
import type { Context } from 'koa';

/** The first value of a query or form parameter (repeated parameters: the first wins, as Go's Get); else undefined. */
export function firstValue(v: unknown): string | undefined {
  if (Array.isArray(v)) return typeof v[0] === 'string' ? v[0] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/**
 * Form fields as single strings: a repeated field keeps its first value, except those named in
 * `joined`, whose repeated values are joined with spaces (OAuth 2.0's `audience`: fosite accepts both forms).
 */
export function formFields(ctx: Context, joined: readonly string[] = []): Record<string, string> {
  const body = ctx.request.body;
  const out: Record<string, string> = {};
  if (!body || typeof body !== 'object') return out;
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (joined.includes(k) && Array.isArray(v)) {
      out[k] = v.filter((x) => typeof x === 'string').join(' ');
      continue;
    }
    const first = firstValue(v);
    if (first !== undefined) out[k] = first;
  }
  return out;
}

/** RFC 6750 §2.1: the token of `Authorization: Bearer <token>` (scheme case-insensitive), trimmed. */
export function bearerToken(authorization: string): string | undefined {
  const m = /^Bearer\s+(.+)$/i.exec(authorization);
  return m ? (m[1] as string).trim() : undefined;
}

/** A response no cache may keep (RFC 6749 §5.1: `Cache-Control: no-store`, and `Pragma: no-cache` for HTTP/1.0). */
export function noStore(ctx: Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

/** A form-encoded (`+` for space) or percent-encoded component, decoded; as given when it is malformed. */
export function formDecode(v: string): string {
  try {
    return decodeURIComponent(v.replaceAll('+', ' '));
  } catch {
    return v;
  }
}
