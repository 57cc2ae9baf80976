/**
 * Hydra's keyset pagination (ory/x keysetpagination_v2): `page_size` (default 100, clamped to 500),
 * an opaque `page_token` that encrypts the keyset cursor with `secrets.pagination` and expires after
 * one hour, and a relative `Link` header with `rel="first"` and, unless on the last page,
 * `rel="next"`. Each list names its own token kind, so a token of one list is refused by another.
 */
import { openJson, sealJson, TokenError } from './crypto/jwe.ts';
import type { KeyRing } from './crypto/keys.ts';
import { AppError, HERODOT } from './errors.ts';
import { firstValue } from './http/params.ts';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
/** Page tokens are for following links now, not for keeping (Hydra: "do not persist page tokens"). */
export const PAGE_TOKEN_TTL_MS = 60 * 60 * 1000;

/** The keyset position: the ordering columns of the last row of the previous page. */
export type Cursor = Record<string, string | number>;

export interface PageRequest {
  size: number;
  /** undefined on the first page. */
  after: Cursor | undefined;
}

const badPage = (reason: string) =>
  new AppError({
    status: 400,
    code: HERODOT.badRequest,
    description: `Unable to parse pagination parameters: ${reason}`,
  });

const tokenType = (kind: string) => `page:${kind}`;

export function encodePageToken(ring: KeyRing, kind: string, cursor: Cursor | undefined, now: Date): Promise<string> {
  return sealJson(ring, tokenType(kind), { c: cursor ?? null }, PAGE_TOKEN_TTL_MS, now.getTime());
}

/** Reads `page_size` and `page_token`; a bad value is a 400 with Hydra's reason text. */
export async function parsePageQuery(
  query: Record<string, string | string[] | undefined>,
  ring: KeyRing,
  kind: string,
  now: Date,
): Promise<PageRequest> {
  let size = DEFAULT_PAGE_SIZE;
  const rawSize = firstValue(query.page_size);
  if (rawSize) {
    if (!/^[+-]?\d{1,9}$/.test(rawSize)) throw badPage(`invalid page_size ${JSON.stringify(rawSize)}`);
    const n = Number(rawSize);
    size = n <= 0 ? DEFAULT_PAGE_SIZE : Math.min(n, MAX_PAGE_SIZE);
  }
  const token = firstValue(query.page_token);
  if (!token) return { size, after: undefined };
  try {
    const body = await openJson<{ c: Cursor | null }>(ring, tokenType(kind), token, now.getTime());
    return { size, after: body.c ?? undefined };
  } catch (e) {
    if (e instanceof TokenError && e.reason === 'expired')
      throw badPage('page token expired, do not persist page tokens');
    throw badPage('invalid pagination token');
  }
}

/** Go's url.QueryEscape: only [A-Za-z0-9-_.~] stay as they are; a space becomes '+'. */
const queryEscape = (s: string) =>
  encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');

/** One Link entry: the request path and its query with page_size and page_token replaced (keys sorted, as Go encodes). */
function linkPart(
  path: string,
  query: Record<string, string | string[] | undefined>,
  rel: string,
  token: string,
  size: number,
) {
  const q = new Map<string, string[]>();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    q.set(k, Array.isArray(v) ? v : [v]);
  }
  q.set('page_token', [token]);
  q.set('page_size', [String(size)]);
  const encoded = [...q.keys()]
    .sort()
    .flatMap((k) => (q.get(k) as string[]).map((v) => `${queryEscape(k)}=${queryEscape(v)}`))
    .join('&');
  return `<${path}?${encoded}>; rel="${rel}"`;
}

/**
 * The `Link` header value of a page, from its encoded tokens: `next` is undefined on the last page.
 * The links are relative (path and query only), as Hydra sends them.
 */
export function linkHeader(opts: {
  path: string;
  query: Record<string, string | string[] | undefined>;
  size: number;
  first: string;
  next: string | undefined;
}): string {
  const parts = [linkPart(opts.path, opts.query, 'first', opts.first, opts.size)];
  if (opts.next) parts.push(linkPart(opts.path, opts.query, 'next', opts.next, opts.size));
  return parts.join(',');
}

/** A page as services return it: the rows plus the tokens of the first and the next page. */
export interface Page<T> {
  items: T[];
  size: number;
  firstToken: string;
  nextToken: string | undefined;
}

/**
 * The page from `rows` fetched with `limit: size + 1`: the first `size` rows, the first-page token,
 * and a next-page token at the cursor of the last row kept when the extra row shows there is more.
 */
export async function keysetPage<T>(
  ring: KeyRing,
  kind: string,
  size: number,
  rows: T[],
  cursorOf: (last: T) => Cursor,
  now: Date,
): Promise<Page<T>> {
  const items = rows.slice(0, size);
  const last = items.at(-1);
  return {
    items,
    size,
    firstToken: await encodePageToken(ring, kind, undefined, now),
    nextToken: rows.length > size && last ? await encodePageToken(ring, kind, cursorOf(last), now) : undefined,
  };
}
